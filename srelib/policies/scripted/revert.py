"""RevertPhase2Policy: read the suspected commit and propose its reverse.

The suspect is the observation's ``bad_commit_sha``; without one, the latest commit that
touched the area the issue points at (found with ``get_git_log``). Undoing the change that
caused an incident is what an on-call engineer does first to mitigate, but it is no repair: a
bad commit also brings the feature it was written for, whose PASS_TO_PASS tests the revert
breaks, so a blind revert resolves ``"no"``; and it reverts innocent commits when handed a
wrong suspect. It declares that no change is needed when the handed-over belief says "none".
It is the baseline for "finds the right commit", not for "fixes the code".
"""

from __future__ import annotations

import re

from srelib.env.actions import SERVICES, ActionType
from srelib.policies.base import EpisodeWatcher, make_action

_HUNK = re.compile(r"^@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@(.*)$")
_NO_FAULT = re.compile(r"\b(fault[_ ]class|suspected[_ ]fault[_ ]class)\b\W+none\b", re.IGNORECASE)


def reverse_diff(diff: str) -> str:
    """The unified diff that undoes ``diff``: files, hunk ranges and +/- lines swapped."""
    out: list[str] = []
    lines = diff.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = line[4:], lines[i + 1][4:]
            out += [f"--- {_swap_side(new, 'a/')}", f"+++ {_swap_side(old, 'b/')}"]
            i += 2
            continue
        out.append(_reverse_line(line))
        i += 1
    return "\n".join(out) + ("\n" if diff.endswith("\n") else "")


def _swap_side(path: str, prefix: str) -> str:
    """A header path moved to the other side: ``b/x`` -> ``a/x`` (``/dev/null`` stays)."""
    if path.startswith("/dev/null"):
        return path
    bare = path[2:] if path[:2] in ("a/", "b/") else path
    return prefix + bare


def _reverse_line(line: str) -> str:
    match = _HUNK.match(line)
    if match:
        return f"@@ -{match.group(2)} +{match.group(1)} @@{match.group(3)}"
    if line.startswith("diff --git "):
        parts = line.split(" ")
        if len(parts) == 4:
            return f"diff --git {_swap_side(parts[3], 'a/')} {_swap_side(parts[2], 'b/')}"
        return line
    if line.startswith("new file mode"):
        return "deleted" + line[len("new"):]
    if line.startswith("deleted file mode"):
        return "new" + line[len("deleted"):]
    if line.startswith("index ") and ".." in line:
        head, _, mode = line[6:].partition(" ")
        before, _, after = head.partition("..")
        return f"index {after}..{before}" + (f" {mode}" if mode else "")
    if line.startswith("+"):
        return "-" + line[1:]
    if line.startswith("-"):
        return "+" + line[1:]
    return line


def suspicious_area(observation: dict) -> str | None:
    """The directory (or file) the issue points at: a tree path named after a service it names."""
    issue = str(observation.get("issue") or "").lower()
    tree = list(observation.get("file_tree") or [])
    named = [s for s in SERVICES if re.search(rf"\b{s}\b", issue)]
    for service in named:
        for path in tree:
            top = path.split("/", 1)[0]
            if top == service or top.startswith(service):
                return top
    return None


class RevertPhase2Policy(EpisodeWatcher):
    """Phase 2: get the suspect commit's diff, then propose its reverse (see module doc)."""

    name = "revert_p2"

    def __init__(self) -> None:
        self.reset()

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        """Start a new episode.

        Args:
            seed: The episode's seed (accepted for the protocol; the policy is deterministic).
            task_name: The episode's task (accepted for the protocol; unused).
        """
        self._asked: str | None = None  # which query the last action was
        self._last_step = -1

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        self._watch_episode(observation)
        if phase != 2:
            return make_action(ActionType.TRANSITION_TO_PHASE2, belief=None)
        result = observation.get("action_result") or {}
        if self._asked is None:
            if _NO_FAULT.search(str(observation.get("issue") or "")):
                return make_action(ActionType.DECLARE_NO_CHANGE,
                                   reason="the handover says no fault: nothing to change")
            sha = observation.get("bad_commit_sha")
            if sha:
                return self._ask("diff", make_action(ActionType.GET_FILE_DIFF, commit_sha=sha))
            area = suspicious_area(observation)
            log_params = {"n_commits": 5, **({"path": area} if area else {})}
            return self._ask("log", make_action(ActionType.GET_GIT_LOG, **log_params))
        if self._asked == "log":
            commits = result.get("commits") or []
            sha = next((c.get("sha") for c in commits if isinstance(c, dict) and c.get("sha")), None)
            if sha is None:
                return make_action(ActionType.DECLARE_NO_CHANGE,
                                   reason="no commit touches the suspicious area")
            return self._ask("diff", make_action(ActionType.GET_FILE_DIFF, commit_sha=sha))
        diff = result.get("diff") if isinstance(result, dict) else None
        if not isinstance(diff, str) or not diff.strip():
            return make_action(ActionType.DECLARE_NO_CHANGE,
                               reason="the suspect commit's diff could not be read")
        return make_action(ActionType.PROPOSE_PATCH, diff=reverse_diff(diff))

    def _ask(self, what: str, action: dict) -> dict:
        self._asked = what
        return action

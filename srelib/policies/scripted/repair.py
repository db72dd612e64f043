"""Scripted phase-2 repairs: a partial revert that needs no answer, and the repair ladder.

:class:`PartialRevertPhase2Policy` uses only what an agent sees: the handed-over belief (its
``bad_commit_sha`` and the issue), the suspect commit's diff and the current files. It diffs the
suspect, reads the files whose existing lines the commit edited, and proposes the patch that
undoes those edits while keeping the code the commit added
(:mod:`srelib.policies.scripted.partial_revert`). It declares no change when the handover says there is
no fault, when no suspect was handed over, or when the suspect only adds code.

:class:`LadderPhase2Policy` is the same repair given one more piece of the answer per rung
(:data:`RUNGS`): ``belief`` (nothing beyond the handover: the baseline itself), ``commit`` (the
true bad commit replaces the suspect), ``file`` (only edits in the files the reference fix
changes), ``function`` (only edits inside the functions it changes, or outside every function) and ``patch`` (the reference
fix itself). Played after the oracle handoff, the rungs show how much of the repair each piece
of knowledge buys. Every rung above ``belief`` is an oracle: it is handed the answer through
:mod:`srelib.policies.oracle`, and its episodes are marked so.
"""

from __future__ import annotations

from srelib.env.actions import ActionType
from srelib.policies.base import EpisodeWatcher, make_action
from srelib.policies.oracle import AnswerKey
from srelib.policies.scripted.partial_revert import Block, edit_blocks, locate, revert_blocks
from srelib.policies.scripted.revert import _NO_FAULT

#: The ladder's rungs, each knowing one more piece of the answer than the one before.
RUNGS = ("belief", "commit", "file", "function", "patch")


class PartialRevertPhase2Policy(EpisodeWatcher):
    """Phase 2: diff the suspect, read what it edited, undo its edits (see the module doc).
    In phase 1 (used alone in a joint episode) it transitions with no belief."""

    name = "partial_revert_p2"

    def __init__(self) -> None:
        self.reset()

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        """Start a new episode.

        Args:
            seed: The episode's seed (accepted for the protocol; the policy is deterministic).
            task_name: The episode's task (accepted for the protocol; unused).
        """
        self._blocks: list[Block] | None = None  # the suspect's edit blocks, once diffed
        self._to_read: list[str] = []
        self._files: dict[str, str] = {}
        self._reading: str | None = None

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        self._watch_episode(observation)
        if phase != 2:
            return make_action(ActionType.TRANSITION_TO_PHASE2, belief=None)
        result = observation.get("action_result") or {}
        if self._blocks is None:
            return self._start(observation, task_name, result)
        if self._reading is not None and isinstance(result.get("content"), str) \
                and not result.get("truncated"):
            self._files[self._reading] = result["content"]
        if self._to_read:
            self._reading = self._to_read.pop(0)
            return make_action(ActionType.READ_FILE, path=self._reading)
        chosen = [b for b in self._blocks
                  if b.path in self._files and self._keep_block(b, self._files, task_name)]
        diff, undone = revert_blocks(self._files, chosen)
        if not undone:
            return make_action(ActionType.DECLARE_NO_CHANGE,
                               reason="none of the suspect commit's edits is still in place")
        return make_action(ActionType.PROPOSE_PATCH, diff=diff)

    def _start(self, observation: dict, task_name: str, result: dict) -> dict:
        if "diff" not in result:  # first phase-2 step: ask for the suspect's diff
            if _NO_FAULT.search(str(observation.get("issue") or "")):
                return make_action(ActionType.DECLARE_NO_CHANGE,
                                   reason="the handover says no fault: nothing to change")
            sha = self._suspect(observation, task_name)
            if not sha:
                return make_action(ActionType.DECLARE_NO_CHANGE,
                                   reason="no suspect commit was handed over")
            return make_action(ActionType.GET_FILE_DIFF, commit_sha=sha)
        diff = result.get("diff") if not result.get("truncated") else None
        self._blocks = [b for b in edit_blocks(diff or "") if self._keep_file(b.path, task_name)]
        self._to_read = list(dict.fromkeys(b.path for b in self._blocks))
        if not self._to_read:
            return make_action(ActionType.DECLARE_NO_CHANGE,
                               reason="the suspect commit edits no existing code")
        self._reading = self._to_read.pop(0)
        return make_action(ActionType.READ_FILE, path=self._reading)

    def _suspect(self, observation: dict, task_name: str) -> str | None:
        """The commit to partially revert: the handed-over suspect."""
        return observation.get("bad_commit_sha")

    def _keep_file(self, path: str, task_name: str) -> bool:
        """Whether edits in ``path`` may be undone (every file, without knowledge)."""
        return True

    def _keep_block(self, block: Block, files: dict[str, str], task_name: str) -> bool:
        """Whether to undo ``block`` given the current ``files`` (every edit, without knowledge)."""
        return True


class LadderRungs(AnswerKey):
    """Mixin for a phase-2 repair played at one rung of the ladder (see :data:`RUNGS`): it is
    handed the answer and knows it up to ``rung``; the repair it is mixed into asks
    :meth:`_knows` and :meth:`_site`. ``name`` is ``name_prefix`` and the rung."""

    name_prefix = "ladder"

    def __init__(self, rung: str = "belief") -> None:
        if rung not in RUNGS:
            raise ValueError(f"unknown rung {rung!r}; valid rungs: {', '.join(RUNGS)}")
        self.rung = rung
        self.name = f"{self.name_prefix}_{rung}"
        self.needs_answer = rung != "belief"
        super().__init__()

    def _site(self, task: str):
        from srelib.env.grading.bug_site import bug_site

        return bug_site(self.answer_name(task))

    def _knows(self, rung: str) -> bool:
        return RUNGS.index(self.rung) >= RUNGS.index(rung)

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        if phase == 2 and self._knows("patch"):
            from srelib.policies.scripted.reference import phase2_plan

            self._watch_episode(observation)
            return phase2_plan(self.answer_name(task_name))[-1]
        return super().__call__(observation, phase, task_name)

    def _suspect(self, observation: dict, task_name: str) -> str | None:
        if self._knows("commit"):  # as the episode shows it (srelib.policies.oracle.hand_answer)
            return self.answer(task_name).bad_commit
        return super()._suspect(observation, task_name)


class LadderPhase2Policy(LadderRungs, PartialRevertPhase2Policy):
    """The partial revert with the answer known up to ``rung`` (see :data:`RUNGS`)."""

    def _keep_file(self, path: str, task_name: str) -> bool:
        return path in self._site(task_name).files if self._knows("file") else True

    def _keep_block(self, block: Block, files: dict[str, str], task_name: str) -> bool:
        """At the ``function`` rung: edits inside a bad function, or outside every function
        (module-level code, which knowing the functions says nothing about)."""
        from srelib.env.grading.bug_site import functions_touching

        if not self._knows("function"):
            return True
        start = locate(files[block.path], block)
        if start is None:
            return False
        lines = {start - 1, start} if not block.added else \
            set(range(start, start + len(block.added)))
        around = functions_touching(block.path, files[block.path], lines)
        bad = {(f.file, f.name) for f in self._site(task_name).functions}
        return not around or any((f.file, f.name) in bad for f in around)

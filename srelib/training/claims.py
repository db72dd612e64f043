"""What a trained model's numbers must show, checked where bytes cannot be compared.

A model trained on the CPU has other weights on another processor (torch picks its kernels
by CPU), so a notebook's stored outputs cannot hold its numbers for nbval to compare. The
notebooks show those numbers in cells nbval does not compare, and then check what they mean
with :func:`agent_claims` and :func:`check`, whose printed lines are the same on every machine
that agrees with the claims.
"""

from __future__ import annotations

from srelib.training.agent import parse_failure_rate


def needs_fix(task: str) -> bool:
    """Whether ``task``'s incident needs a code change (the no-fault ones do not)."""
    from srelib.env.tasks.lookup import get_scenario

    return bool(get_scenario(task).needs_fix)


def beats(frame, policy: str, baseline: str) -> bool:
    """Whether ``policy`` scores above ``baseline`` on the same episodes: the 95% bootstrap CI
    of their paired difference in final score lies above 0."""
    from srelib.analysis.stats import paired_difference

    if not {policy, baseline} <= set(frame["policy"]):
        return False  # no episode of one of them: nothing bears the claim out
    return bool(paired_difference(frame, policy, baseline).iloc[-1]["ci_low"] > 0)


def agent_claims(frame, policy: str = "agent", baseline: str = "null",
                 max_unreadable: float = 0.10) -> dict[str, bool]:
    """The claims a results ``frame`` must bear out for ``policy``, a model trained to act:
    at most ``max_unreadable`` of its replies unreadable, and, on the incidents that need a
    code fix, a score above ``baseline``'s with a CI that excludes 0 (the small agent writes
    no patch and never declares that no change is needed, so the no-fault incidents, where a
    baseline that does nothing scores, are not its claim)."""
    mine = frame[frame["policy"] == policy]
    faulty = frame[frame["task"].map(needs_fix)]
    return {
        f"{policy}: at most {max_unreadable:.0%} of its replies were not a readable action":
            parse_failure_rate(mine) <= max_unreadable,
        f"{policy}: on the incidents that need a code fix it scores above {baseline} "
        "(95% CI of the paired difference above 0)": beats(faulty, policy, baseline),
    }


def check(claims: dict[str, bool], required: bool = True) -> None:
    """Print each claim with ✓ or ✗; when ``required``, raise AssertionError naming those
    that do not hold (a notebook requires them of the CPU agent, and only reports them for a
    model of your own)."""
    for claim, holds in claims.items():
        print(f"{'✓' if holds else '✗'} {claim}")
    failed = [claim for claim, holds in claims.items() if not holds]
    if failed and required:
        raise AssertionError("claims that do not hold: " + "; ".join(failed))

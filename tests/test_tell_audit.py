"""The tell audit (issue 28, requirement 3): one surface field read alone must not predict the
culprit, the fault class, no-fault or the bad commit on held-out tasks."""

from __future__ import annotations

import random

import pytest

from srelib.cli import main
from srelib.env.actions import SERVICES
from srelib.analysis.tell_audit import (MAX_OVER_CHANCE, MAX_RATE, Surface, audit, audit_surfaces,
                               failures, format_audit, mask)


def _surfaces(n: int, tell: bool, seed: int) -> list[Surface]:
    """Synthetic tasks; with ``tell`` the culprit's newest note is one no innocent ever has."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        culprit = rng.choice(SERVICES)
        notes = {s: rng.choice(("Bug fixes", "Dependency bumps", "Ship a feature")) for s in SERVICES}
        if tell:
            notes[culprit] = f"Ship feature {k}"
        s = Surface(f"t{k}", culprit, rng.choice(("memory_leak", "deadlock")), True, "b" * 7)
        s.task_fields = {"title [exact]": rng.choice(("Errors", "Slow pages"))}
        s.service_fields = {"deploy note (newest) [exact]": notes}
        s.commit_fields = {"place from oldest [position]": ["0", "1", "2"]}
        s.commits = ["a" * 7, rng.choice(("b" * 7, "c" * 7)), "d" * 7]
        out.append(s)
    return out


@pytest.fixture
def fields(monkeypatch):
    """Audit only the three synthetic fields."""
    import srelib.analysis.tell_audit as ta

    monkeypatch.setattr(ta, "FIELDS", (("title", "exact", "task"),
                                       ("deploy note (newest)", "exact", "service"),
                                       ("place from oldest", "position", "commit")))


def test_a_planted_tell_fails_and_noise_passes(fields):
    rows = {(r["field"], r["target"]): r for r in audit_surfaces(_surfaces(200, True, 1), _surfaces(100, True, 2))}
    assert not rows[("deploy note (newest) [exact]", "service")]["passes"]
    assert rows[("deploy note (newest) [exact]", "service")]["rate"] == 1.0
    clean = audit_surfaces(_surfaces(200, False, 1), _surfaces(100, False, 2))
    assert failures(clean) == [], format_audit(clean)
    for r in clean:
        assert r["bar"] == min(MAX_RATE, r["chance"] + MAX_OVER_CHANCE)


def test_leave_one_out_needs_two_tasks(fields):
    with pytest.raises(ValueError, match="two tasks"):
        audit_surfaces(_surfaces(1, False, 3))
    with pytest.raises(ValueError, match="unknown suite"):
        audit("nope")


def test_mask_hides_service_names_and_digits():
    assert mask("Deploy v2.3.1 of the api gateway and orders") == "Deploy v#.#.# of the <svc> and <svc>"


def test_the_classic_suite_has_no_tell(capsys):
    """Leave-one-task-out over the ten: the bad commit is no longer the third-oldest, the
    culprit's notes are drawn like the others', the summary names services in no fixed place.
    The commit-shape fields (issue 45) found one more tell in the hand-written histories, the
    bad commits were the ones that remove lines (0.72 held-out); innocent commits that rewrite
    code, tests and docs now remove lines too, and neither that field nor the learned model
    over every shape names the bad commit."""
    assert main(["tasks", "audit", "--suite", "classic", "--no-battery"]) == 0
    out = capsys.readouterr().out
    assert "| place from oldest [position] | bad commit |" in out
    assert "| commit shape [learned] | bad commit |" in out
    assert not [line for line in out.splitlines() if line.endswith("| TELL |")]


def test_the_generated_suite_audit_is_the_one_its_file_records():
    """Suite building ran this audit (the admission hook); what it found is in suite.json."""
    from srelib.env.tasks.taskgen import generated_suite

    rows = audit("generated")
    assert failures(rows) == generated_suite().tells == []
    fixed = {("place from oldest [position]", "bad_commit"), ("commit body [masked]", "bad_commit"),
             ("deploy note (oldest) [masked]", "service"), ("deploy note (newest) [exact]", "service"),
             ("place in summary [position]", "service"), ("severity [exact]", "no_fault"),
             ("title [masked]", "no_fault")}
    assert all(r["passes"] for r in rows if (r["field"], r["target"]) in fixed), format_audit(rows)


def test_a_generator_the_audit_flags_writes_no_suite_file(monkeypatch, tmp_path):
    from srelib.analysis import suite_build
    from srelib.env.tasks.taskgen import suite

    target = tmp_path / "suite.json"
    target.write_text("as reviewed\n")
    monkeypatch.setattr(suite, "SUITE_FILE", target)
    flagged = suite.SuiteReport(tells=["deploy note (newest) [exact] -> service: 0.91"])
    with pytest.raises(ValueError, match="tell audit rejects this generator"):
        suite_build.write_suite_file(flagged)
    assert target.read_text() == "as reviewed\n"

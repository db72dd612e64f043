"""Forged runs: ways to edit a saved run, each caught by ``load_run(verify=True)`` or reported
as a claim, with the episode named.

Honest runs are written by ``srelib.evaluate`` (the manifest plans the grid and names the
registry-built policies); each test copies one, makes an edit a cheater would make to look
better, and requires verification to fail naming the edited episode (or the one the edit
removed), or to list it among the claims. The edits of issue 45 (a relabel with the plan and
digest recomputed, a swap of two policies' labels, a best-of-seeds cherry-pick, a seed-0
episode duplicated under other seeds, config edits) come with their fourth kinds (an episode
removed with the plan rewritten, a task renamed, another srelib version claimed, an oracle
flag dropped, a signed run edited).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil

import pytest

import srelib
from srelib.cli import main
from srelib.env.actions import PARSE_ERROR, ActionType
from srelib.env.belief import BeliefState
from srelib.env.grading.score import score_trajectory
from srelib.policies.base import handoff_action, make_action
from srelib.policies.scripted.baselines import RandomPhase2Policy
from srelib.policies.scripted.reference import ReferencePolicy
from srelib.policies.registry import scripted_policy
from srelib.results import (EPISODES_FILE, RUN_FILE, UNVERIFIABLE, Episode, count_parse_failures,
                            plan_digest)
from srelib.results.signing import SIGNATURE_FILE, sign_run
from srelib.runners.rollout import evaluate

TRAIN, HELDOUT = "memory_leak", "heldout_aliased_severity"


class GarbledPolicy:
    """Replies once with text no parser reads, then hands over empty and proposes no patch."""

    name = "garbled"

    def __call__(self, observation, phase, task_name):
        if observation["steps_taken"] == 0:
            return "I think we should look at the logs first"
        if phase == 1:
            return handoff_action(BeliefState())
        return make_action(ActionType.PROPOSE_PATCH, diff="")


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    """An honest run: the reference, a garbled and a random policy, a train and a held-out
    task, two seeds, ``r_cross`` against a null repair of 0.2; and a run cut by a step cap."""
    root = tmp_path_factory.mktemp("honest")
    evaluate({"reference": ReferencePolicy, "garbled": GarbledPolicy,
              "random": RandomPhase2Policy}, tasks=[TRAIN, HELDOUT],
             pools=["C", "D"], seeds=2, out=root / "run", progress=False,
             null_repair={TRAIN: 0.2, HELDOUT: 0.2})
    evaluate({"reference": ReferencePolicy}, tasks=[TRAIN], pools=["C"], seeds=1, max_steps=3,
             out=root / "capped", progress=False)
    evaluate({name: scripted_policy(name) for name in ("reference", "null", "heuristic")},
             tasks=[TRAIN], pools=["B", "C"], seeds=3, out=root / "scripted", progress=False)
    for run in ("run", "capped", "scripted"):
        srelib.load_run(root / run, verify=True)  # the honest runs verify
    return root


def _forge(honest, tmp_path, edit, run="run", manifest=None):
    """A copy of the honest ``run`` with ``edit(episodes)`` applied to its list of episode dicts
    and ``manifest(record)`` to its ``run.json``."""
    forged = tmp_path / run
    shutil.copytree(honest / run, forged)
    path = forged / EPISODES_FILE
    episodes = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    edit(episodes)
    path.write_text("".join(json.dumps(e) + "\n" for e in episodes))
    if manifest is not None:
        record = json.loads((forged / RUN_FILE).read_text())
        manifest(record, episodes)
        (forged / RUN_FILE).write_text(json.dumps(record))
    return forged


def _replan(record, episodes):
    """What a careful forger does after editing the episodes: plan them, digest recomputed,
    and name only the policies played."""
    keys = [[e[k] for k in ("policy", "task", "pool", "mode", "seed")] for e in episodes]
    record["plan"] = {"episodes": keys, "digest": plan_digest(keys)}
    played = {k[0] for k in keys}
    config = record["config"]
    config["policies"] = {n: d for n, d in config["policies"].items() if n in played}


def _one(episodes, policy="reference", task=TRAIN, pool="C", seed=1) -> dict:
    wanted = srelib.task_id(task)
    return next(e for e in episodes
                if (e["policy"], e["task"], e["pool"], e["seed"]) == (policy, wanted, pool, seed))


def _rescored(episode: dict) -> dict:
    """What a careful forger does after editing the records: score them again."""
    episode["score"] = score_trajectory(episode["task"], episode["mode"], episode["steps"])
    return episode


def _rejected(path, *names: str) -> str:
    with pytest.raises(ValueError, match="do not replay") as caught:
        srelib.load_run(path, verify=True)
    message = str(caught.value)
    if not all(name in message for name in names):  # the error shows the first five problems
        message += "\n" + "\n".join(srelib.verify_run(path).problems)
    for name in names:
        assert name in message, message
    return message


def test_the_manifest_plans_the_grid_and_lists_what_no_replay_checks(honest):
    record = json.loads((honest / "run" / RUN_FILE).read_text())
    planned = record["plan"]["episodes"]
    assert len(planned) == 3 * 2 * 2 and len(record["plan"]["digest"]) == 64
    assert all(srelib.task_id(t) == t for _, t, *_ in planned)  # opaque ids only
    assert record["unverifiable"] == list(UNVERIFIABLE)
    stored = {f.name for f in dataclasses.fields(Episode)}
    assert set(UNVERIFIABLE) < stored  # every other field is checked by the replay or the plan


def test_a_relabelled_seed_fails(honest, tmp_path):
    def relabel(episodes):
        _one(episodes, "garbled", seed=1)["seed"] = 7

    _rejected(_forge(honest, tmp_path, relabel), "('garbled', 'memory_leak', 'C', 'joint', 7): "
              "not in the plan", "('garbled', 'memory_leak', 'C', 'joint', 1): planned but missing")

    def swap(episodes):  # seeds swapped inside the plan: the records no longer replay
        a, b = (_one(episodes, "random", seed=s) for s in (0, 1))
        assert a["steps"] != b["steps"]  # (two identical episodes would both be genuine)
        a["seed"], b["seed"] = b["seed"], a["seed"]

    _rejected(_forge(honest, tmp_path / "swap", swap), "('random', 'memory_leak', 'C', 'joint', 0)",
              "('random', 'memory_leak', 'C', 'joint', 1)")


def test_a_pool_d_episode_recorded_as_phase_2_only_fails(honest, tmp_path):
    def easier(episodes):
        episode = _one(episodes, "reference", HELDOUT, "D", 0)
        episode["mode"] = "p2_only"  # the oracle handoff, on a held-out task
        episode["steps"] = episode["steps"][-2:]
        _rescored(episode)

    _rejected(_forge(honest, tmp_path, easier),
              "('reference', 'heldout_aliased_severity', 'D', 'p2_only', 0)")


def test_cherry_picked_seeds_fail(honest, tmp_path):
    def drop_worst(episodes):
        garbled = [e for e in episodes if e["policy"] == "garbled"]
        worst = min(garbled, key=lambda e: e["score"]["final"])
        episodes.remove(worst)

    message = _rejected(_forge(honest, tmp_path, drop_worst), "planned but missing")
    assert "garbled" in message


def test_a_dropped_last_record_fails(honest, tmp_path):
    def drop(episodes):  # the last record was a failed patch: drop it and score the rest
        episode = _one(episodes, "garbled", seed=0)
        episode["steps"].pop()
        _rescored(episode)

    _rejected(_forge(honest, tmp_path, drop), "('garbled', 'memory_leak', 'C', 'joint', 0): "
              "the episode says it ended as ('propose_patch', True, False); the replay did not end")

    def blame_the_cap(episodes):  # and say the step cap cut it
        episode = _one(episodes, "garbled", seed=0)
        episode["steps"].pop()
        episode.update(ended_by="max_steps", terminated=False, truncated=True)
        _rescored(episode)

    _rejected(_forge(honest, tmp_path / "cap", blame_the_cap), "the run had no step cap")

    def under_the_cap(episodes):  # a capped run: one action fewer than the cap
        episodes[0]["steps"].pop()
        _rescored(episodes[0])

    _rejected(_forge(honest, tmp_path, under_the_cap, run="capped"), "step cap (3) ended it after 2")


def test_a_flipped_ended_by_fails(honest, tmp_path):
    def flip(episodes):
        _one(episodes, "reference", seed=0)["ended_by"] = "give_up"

    _rejected(_forge(honest, tmp_path, flip), "('reference', 'memory_leak', 'C', 'joint', 0): "
              "the episode says it ended as ('give_up'")

    def crash(episodes):  # a capped episode passed off as a policy crash
        episodes[0]["ended_by"] = "policy_error"

    _rejected(_forge(honest, tmp_path, crash, run="capped"), "no traceback to show for it")


def test_a_parse_error_rewritten_as_an_action_fails(honest, tmp_path):
    def rewrite(action):
        def edit(episodes):
            episode = _one(episodes, "garbled", seed=1)
            record = next(r for r in episode["steps"] if r["action"]["action_type"] == PARSE_ERROR)
            record["action"] = action
            episode["parse_failures"] = count_parse_failures(episode["steps"])
        return edit

    original = _one([json.loads(line) for line in
                     (honest / "run" / EPISODES_FILE).read_text().splitlines()], "garbled", seed=1)
    assert original["parse_failures"] == 1
    for n, action in enumerate([make_action(ActionType.VIEW_ALERTS),  # would replay as valid
                                make_action("look_at_logs")]):  # invalid, with the parse error kept
        _rejected(_forge(honest, tmp_path / str(n), rewrite(action)),
                  "('garbled', 'memory_leak', 'C', 'joint', 1): record 0 (step 1) differs")

    def undercount(episodes):
        _one(episodes, "garbled", seed=1)["parse_failures"] = 0

    _rejected(_forge(honest, tmp_path / "count", undercount), "says 0 parse failures")


def test_an_edited_cross_term_fails(honest, tmp_path):
    def lift(episodes):
        episode = _one(episodes, "reference", seed=0)
        assert episode["r_cross"] == pytest.approx(0.8)  # repair 1.0 over the null repair 0.2
        episode["r_cross"] = 1.0

    _rejected(_forge(honest, tmp_path, lift), "says r_cross=1.0; the run's null_repair gives 0.8")


def test_a_run_without_a_plan_or_with_an_edited_plan_is_not_verified(honest, tmp_path):
    forged = _forge(honest, tmp_path, lambda episodes: None)
    record = json.loads((forged / RUN_FILE).read_text())
    record["plan"]["episodes"].pop()
    (forged / RUN_FILE).write_text(json.dumps(record))
    _rejected(forged, "does not match its digest", "not in the plan")
    del record["plan"]
    (forged / RUN_FILE).write_text(json.dumps(record))
    _rejected(forged, "no planned grid")


def test_an_honest_episode_still_replays_alone(honest):
    line = (honest / "run" / EPISODES_FILE).read_text().splitlines()[0]
    episode = Episode.from_json(line)
    assert srelib.verify_episode(copy.deepcopy(episode), null_repair={TRAIN: 0.2, HELDOUT: 0.2}).ok


def _name(policy, seed, pool="C", task=TRAIN) -> str:
    return repr((policy, task, pool, POOL_MODE[pool], seed))


POOL_MODE = {"B": "p2_only", "C": "joint", "D": "joint"}


def _verified(path, **kwargs):
    """The frame of a run that verifies (its claims in ``attrs``)."""
    frame = srelib.load_run(path, verify=True, **kwargs)
    assert frame.attrs["verified"] is True
    return frame


def test_the_reference_relabelled_as_another_scripted_policy_fails(honest, tmp_path):
    def relabel(episodes):  # the reference's episodes stand in for heuristic's, no oracle flag
        episodes[:] = [e for e in episodes if e["policy"] != "heuristic"]
        for e in episodes:
            if e["policy"] == "reference":
                e.update(policy="heuristic", oracle=False)

    forged = _forge(honest, tmp_path, relabel, "scripted", _replan)
    message = _rejected(forged, f"{_name('heuristic', 0)}: srelib's 'heuristic' re-run from its "
                        "registry plays otherwise", _name("heuristic", 2, "B"))
    assert "reference" not in message.split(":")[1]  # the plan no longer holds the reference


def test_the_reference_relabelled_as_an_llm_fails_as_an_oracle_look_alike(honest, tmp_path):
    def relabel(episodes):
        for e in episodes:
            if e["policy"] == "reference":
                e.update(policy="gpt-x", oracle=False)

    def unregister(record, episodes):
        _replan(record, episodes)
        record["config"]["policies"]["gpt-x"] = "openai(model='gpt-x')"
        del record["config"]["registered"]["reference"]

    _rejected(_forge(honest, tmp_path, relabel, "scripted", unregister),
              f"{_name('gpt-x', 1)}: plays exactly as srelib's oracle policy 'reference'")


def test_an_unregistered_policy_relabelled_is_reported_as_a_claim(honest, tmp_path):
    def relabel(episodes):  # garbled's episodes passed off as another unregistered policy's
        for e in episodes:
            if e["policy"] == "garbled":
                e["policy"] = "my-agent"

    frame = _verified(_forge(honest, tmp_path, relabel, manifest=_replan))
    claims = frame.attrs["claims"]
    key = "('my-agent', 'memory_leak', 'C', 'joint', 0): replayed, not re-run"
    assert any(c.startswith(key) and "is the run's claim" in c for c in claims), claims
    assert not any(c.startswith("('reference'") for c in claims)  # the reference was re-run


def test_two_policies_labels_swapped_fail(honest, tmp_path):
    def swap(episodes):  # null <-> reference, the plan untouched
        for e in episodes:
            if e["policy"] in ("null", "reference"):
                e["policy"] = "reference" if e["policy"] == "null" else "null"
                e["oracle"] = e["policy"] == "reference"

    _rejected(_forge(honest, tmp_path, swap, "scripted"),
              f"{_name('null', 0)}: srelib's 'null' re-run", f"{_name('reference', 2, 'B')}: "
              "srelib's 'reference' re-run")


def _best(episodes):
    """Per (policy, task, pool), the best-scoring seed's episode."""
    cells = {}
    for e in episodes:
        cell = (e["policy"], e["task"], e["pool"])
        if cell not in cells or e["score"]["final"] > cells[cell]["score"]["final"]:
            cells[cell] = e
    return list(cells.values())


def test_a_best_of_seeds_cherry_pick_with_the_plan_rewritten_fails(honest, tmp_path):
    kept = _best([json.loads(line) for line in
                  (honest / "scripted" / EPISODES_FILE).read_text().splitlines()])
    assert len({e["seed"] for e in kept}) > 1  # different cells keep different seeds

    def pick(episodes):
        episodes[:] = _best(episodes)

    message = _rejected(_forge(honest, tmp_path, pick, "scripted", _replan),
                        "holds it but the plan does not: no evaluate call plans this run")
    dropped = next(e for e in (json.loads(line) for line in
                               (honest / "scripted" / EPISODES_FILE).read_text().splitlines())
                   if e not in kept)
    assert _name(dropped["policy"], dropped["seed"], dropped["pool"]) in message


def test_one_seed_kept_for_the_whole_run_is_a_claim(honest, tmp_path):
    def pick(episodes):  # the seed that suits, the same for every cell: a grid evaluate makes
        episodes[:] = [e for e in episodes if e["seed"] == 2]

    _rejected(_forge(honest, tmp_path / "config", pick, "scripted", _replan),
              "run.json's config (tasks=['memory_leak'], pools=['B', 'C'], seeds=3) plans 12 "
              "episode(s) the plan lacks")

    def seeds(record, episodes):  # the config's seeds rewritten too: a grid evaluate makes
        _replan(record, episodes)
        record["config"]["seeds"] = [2]

    claims = _verified(_forge(honest, tmp_path, pick, "scripted", seeds)).attrs["claims"]
    assert "the seeds 2..2 are not 0..0: that they were fixed before any episode ran is the " \
        "run's claim" in claims, claims


def test_a_seed_0_episode_duplicated_under_other_seeds_fails(honest, tmp_path):
    def duplicate(episodes):  # heuristic's seed-0 episode stored for seeds 1 and 2 too
        first = {(e["policy"], e["pool"]): e for e in episodes if e["seed"] == 0}
        episodes[:] = [dict(copy.deepcopy(first[e["policy"], e["pool"]]), seed=e["seed"])
                       if e["policy"] == "heuristic" else e for e in episodes]

    _rejected(_forge(honest, tmp_path, duplicate, "scripted"), _name("heuristic", 1, "B"),
              _name("heuristic", 2, "C"))

    def extend(episodes):  # or added as seeds the run never played, the plan rewritten
        base = [e for e in episodes if e["seed"] == 0]
        episodes += [dict(copy.deepcopy(e), seed=seed) for e in base for seed in (3, 4)]

    _rejected(_forge(honest, tmp_path / "extend", extend, "scripted", _replan),
              _name("heuristic", 3, "B"), _name("reference", 4))


def test_an_edited_null_repair_is_shown_as_non_standard_everywhere(honest, tmp_path, capsys):
    def free_cross(episodes):  # r_cross against a null repair of 0: the whole repair counts
        for e in episodes:
            if e["r_cross"] is not None:
                e["r_cross"] = e["score"]["repair"]

    def zero(record, episodes):
        record["config"]["null_repair"] = {TRAIN: 0.0, HELDOUT: 0.0}

    forged = _forge(honest, tmp_path, free_cross, manifest=zero)
    check = srelib.verify_run(forged)
    assert check.ok and any(s.startswith("null_repair=") for s in check.nonstandard)
    assert "scored under non-standard settings: null_repair=" in check.summary()
    assert srelib.load_run(forged).attrs["nonstandard"] == list(check.nonstandard)
    assert main(["report", str(forged), "--plots", str(tmp_path / "plots")]) == 0
    assert "Scored under non-standard settings: null_repair=" in capsys.readouterr().out
    shown = _verified(honest / "scripted").attrs["nonstandard"]  # a standard run says only that
    assert [s.split(":")[0] for s in shown] == ["tasks hand-picked"], shown  # its tasks were picked


def test_an_edited_step_cap_fails_or_is_shown_as_non_standard(honest, tmp_path):
    def cap(record, episodes):
        record["config"]["max_steps"] = 3

    _rejected(_forge(honest, tmp_path, lambda episodes: None, "scripted", cap),
              f"{_name('reference', 0)}: srelib's 'reference' re-run from its registry plays "
              "otherwise")
    capped = srelib.load_run(honest / "capped", verify=True)
    assert capped.attrs["nonstandard"][0].startswith("max_steps=3: a runner cap")


def test_edited_weights_and_another_srelib_version_are_reported(honest, tmp_path):
    def claim(record, episodes):
        record["weights"] = {**record["weights"], "repair": 0.9}
        record["versions"]["srelib"] = "9.9.9"

    check = srelib.verify_run(_forge(honest, tmp_path, lambda episodes: None, "scripted", claim))
    assert check.ok  # the replay grades with srelib's weights: the stored scores are srelib's
    assert any(s.startswith("weights=") for s in check.nonstandard)
    assert any("says srelib '9.9.9' made it" in c for c in check.claims)


def test_an_episode_removed_with_the_plan_rewritten_fails(honest, tmp_path):
    def drop(episodes):
        episodes.remove(_one(episodes, "heuristic", pool="B", seed=1))

    _rejected(_forge(honest, tmp_path, drop, "scripted", _replan),
              f"{_name('heuristic', 1, 'B')}: the plan's grid")


def test_a_renamed_task_fails(honest, tmp_path):
    def rename(episodes):
        _one(episodes, "null", pool="C", seed=0)["task"] = srelib.task_id("cascading_failure")

    _rejected(_forge(honest, tmp_path, rename, "scripted", _replan),
              "('null', 'cascading_failure', 'C', 'joint', 0): record 0")


def test_a_dropped_oracle_flag_fails(honest, tmp_path):
    def hide(episodes):
        _one(episodes, "reference", pool="B", seed=0)["oracle"] = False

    _rejected(_forge(honest, tmp_path, hide, "scripted"),
              f"{_name('reference', 0, 'B')}: says oracle=False; srelib's 'reference' is handed")


@pytest.mark.parametrize("scheme", ["hmac", "ed25519"])
def test_a_signed_run_verifies_only_under_its_key_and_unedited(honest, tmp_path, scheme):
    if scheme == "ed25519":
        pytest.importorskip("cryptography")
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519

        private = ed25519.Ed25519PrivateKey.generate()
        key = tmp_path / "run.pem"
        key.write_bytes(private.private_bytes(serialization.Encoding.PEM,
                                              serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()))
        check_key = tmp_path / "run.pub.pem"
        check_key.write_bytes(private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        other = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        with pytest.raises(ValueError, match="signing needs the private key"):
            sign_run(honest / "scripted", check_key)
    else:
        key = check_key = tmp_path / "run.key"
        key.write_bytes(b"0123456789abcdef0123456789abcdef")
        other = b"another secret of thirty-two b.."
    signed = _forge(honest, tmp_path, lambda episodes: None, "scripted")
    sign_run(signed, key)
    assert json.loads((signed / SIGNATURE_FILE).read_text())["scheme"] == \
        ("ed25519" if scheme == "ed25519" else "hmac-sha256")
    _verified(signed, key=check_key)
    assert any("not checked" in c for c in _verified(signed).attrs["claims"])
    (tmp_path / "other").write_bytes(other)
    with pytest.raises(ValueError, match="does not match run.json and episodes.jsonl"):
        srelib.load_run(signed, verify=True, key=tmp_path / "other")

    def zero(record, episodes):  # the null repair edit, which a replay cannot see, now fails
        record["config"]["null_repair"] = {TRAIN: 0.0}

    shutil.copy(signed / SIGNATURE_FILE, tmp_path / SIGNATURE_FILE)
    forged = _forge(signed, tmp_path / "forged", lambda episodes: None, "", zero)
    with pytest.raises(ValueError, match="the run was changed after signing"):
        srelib.load_run(forged, verify=True, key=check_key)
    unsigned = _forge(honest, tmp_path / "unsigned", lambda episodes: None, "scripted")
    with pytest.raises(ValueError, match="the run is not signed"):
        srelib.load_run(unsigned, verify=True, key=check_key)


def test_a_short_or_missing_key_is_a_clear_error(honest, tmp_path):
    (tmp_path / "short").write_bytes(b"secret")
    with pytest.raises(ValueError, match="holds 6 bytes; an HMAC secret needs at least 16"):
        sign_run(honest / "scripted", tmp_path / "short")
    with pytest.raises(ValueError, match="does not exist"):
        srelib.load_run(honest / "scripted", key=tmp_path / "absent")


def test_eval_signs_and_verify_checks_on_the_command_line(tmp_path, capsys):
    key = tmp_path / "run.key"
    key.write_bytes(b"a secret the forger does not hold")
    run = tmp_path / "run"
    assert main(["eval", "--policy", "null", "--tasks", TRAIN, "--seeds", "2", "--out", str(run),
                 "--no-progress", "--sign", str(key)]) == 0
    assert "signed:" in capsys.readouterr().out
    assert main(["verify", str(run), "--key", str(key)]) == 0
    out = capsys.readouterr().out  # provenance, the workers split, the costs: the run's word
    assert "2 episodes: verified; 3 claim(s)" in out and "provenance is the run's word" in out
    episodes = (run / EPISODES_FILE).read_text().splitlines()
    (run / EPISODES_FILE).write_text(episodes[1] + "\n" + episodes[0] + "\n")  # same episodes
    assert main(["verify", str(run), "--key", str(key)]) == 1
    out = capsys.readouterr().out
    assert "NOT verified: 1 problem(s)" in out and "changed after signing" in out


def test_a_step_cap_is_shown_by_eval_verify_and_the_frames(tmp_path, capsys):
    run = tmp_path / "capped"
    assert main(["eval", "--policy", "heuristic", "--tasks", TRAIN, "--seeds", "1", "--out",
                 str(run), "--no-progress", "--max-steps", "2"]) == 0
    assert "Scored under non-standard settings: max_steps=2" in capsys.readouterr().out
    assert main(["verify", str(run)]) == 0
    assert "scored under non-standard settings: max_steps=2" in capsys.readouterr().out
    assert srelib.load_run(run).attrs["nonstandard"][0].startswith("max_steps=2")
    frame = evaluate({"heuristic": scripted_policy("heuristic")}, tasks=[TRAIN], seeds=1,
                     max_steps=2, progress=False)
    assert frame.attrs["nonstandard"][0].startswith("max_steps=2")


def test_a_run_resumed_with_another_policy_still_re_runs_the_first(tmp_path):
    run = tmp_path / "run"
    evaluate({"null": scripted_policy("null")}, tasks=[TRAIN], seeds=2, out=run, progress=False)
    evaluate({"reference": scripted_policy("reference")}, tasks=[TRAIN], seeds=2, out=run,
             progress=False)
    assert json.loads((run / RUN_FILE).read_text())["config"]["registered"] == {
        "null": "null", "reference": "reference"}
    assert not any(c.startswith("(") for c in _verified(run).attrs["claims"])  # none names an episode

    def swap(episodes):
        for e in episodes:
            e["policy"] = "reference" if e["policy"] == "null" else "null"
            e["oracle"] = e["policy"] == "reference"

    _rejected(_forge(tmp_path, tmp_path / "swap", swap), f"{_name('null', 0)}: srelib's 'null' "
              "re-run")


# Red team 3 (rt3): forgeries that passed with no claim, and the ones they suggest.

@pytest.fixture(scope="module")
def phase1(tmp_path_factory):
    """An honest run of two scripted phase-1 policies on three hand-picked train tasks."""
    run = tmp_path_factory.mktemp("rt3") / "run"
    evaluate({name: scripted_policy(name) for name in ("null", "heuristic")},
             tasks=[TRAIN, "cascading_failure", "distributed_deadlock"], pools=["A"], seeds=2,
             out=run, progress=False)
    return run.parent


_SWAP = {"null": "heuristic", "heuristic": "null"}


def test_labels_swapped_with_the_registry_map_swapped_fail(phase1, tmp_path):
    def swap(episodes):
        for e in episodes:
            e["policy"] = _SWAP[e["policy"]]

    def registered(record, episodes):
        config = record["config"]
        config["registered"] = {_SWAP.get(k, k): v for k, v in config["registered"].items()}

    _rejected(_forge(phase1, tmp_path, swap, manifest=registered),
              "('heuristic', 'memory_leak', 'A', 'p1_only', 0): labelled 'heuristic', srelib's "
              "scripted policy of that name, but the run registers it as 'null'")


def test_one_task_under_its_id_and_its_public_name_fails(phase1, tmp_path):
    alias = srelib.task_id("cascading_failure")

    def twice(episodes):
        episodes += [dict(copy.deepcopy(e), task="cascading_failure") for e in episodes
                     if e["task"] == alias]

    _rejected(_forge(phase1, tmp_path, twice, manifest=_replan),
              f"task 'cascading_failure' is planned under 2 names ['{alias}', 'cascading_failure']")

    def renamed(episodes):  # or only under its name: evaluate plans ids
        for e in episodes:
            if e["task"] == alias:
                e["task"] = "cascading_failure"

    _rejected(_forge(phase1, tmp_path / "name", renamed, manifest=_replan),
              "task 'cascading_failure' is planned by its name, not its id")


def test_a_task_dropped_after_the_results_is_shown_as_hand_picked(phase1, tmp_path, capsys):
    worst = srelib.task_id("distributed_deadlock")

    def drop(episodes):
        episodes[:] = [e for e in episodes if e["task"] != worst]

    def config(record, episodes):
        _replan(record, episodes)
        record["config"]["tasks"] = f"{TRAIN},cascading_failure"

    forged = _forge(phase1, tmp_path, drop, manifest=config)
    notice = "tasks hand-picked: cascading_failure, memory_leak (not a whole suite or split"
    assert _verified(forged).attrs["nonstandard"][0].startswith(notice)
    assert srelib.load_run(forged).attrs["nonstandard"][0].startswith(notice)
    assert main(["verify", str(forged)]) == 0
    assert f"scored under non-standard settings: {notice}" in capsys.readouterr().out
    frame = evaluate({"null": scripted_policy("null")}, tasks=[TRAIN, "cascading_failure"],
                     pools=["A"], seeds=1, progress=False)
    assert frame.attrs["nonstandard"][0].startswith(notice)  # shown as the run is made, too


def test_a_config_that_names_a_wider_grid_than_the_plan_fails(phase1, tmp_path):
    def whole_suite(record, episodes):  # the hand-picked run passed off as the classic suite
        record["config"]["tasks"] = "classic"

    _rejected(_forge(phase1, tmp_path, lambda episodes: None, manifest=whole_suite),
              "run.json's config (tasks='classic', pools=['A'], seeds=2) plans")


def test_sandbox_fields_are_re_derived_from_the_replay(phase1, tmp_path):
    def unsafe(record, episodes):
        record.update(sandbox="unsafe", isolation="none", verified=False)

    claims = _verified(_forge(phase1, tmp_path, lambda episodes: None, manifest=unsafe)
                       ).attrs["claims"]
    said = [c for c in claims if c.startswith("run.json says its patches were graded under "
                                              "isolation='none', sandbox='unsafe', verified=False")]
    assert said and "the scores verified are the replay's" in said[0], claims
    assert not any("patches were graded" in c for c in _verified(phase1 / "run").attrs["claims"])


def test_provenance_costs_and_unknown_fields_are_named_by_the_verifier(phase1, tmp_path):
    def cheap(episodes):
        for e in episodes:
            e.update(tokens=1, latency_s=0.001, wall_s=0.001)

    def provenance(record, episodes):
        record.update(created="2020-01-01T00:00:00+0000", git={"commit": "0" * 40, "dirty": False},
                      unverifiable=[], reviewed_by="an auditor")
        record["config"]["temperature"] = 0

    claims = _verified(_forge(phase1, tmp_path, cheap, manifest=provenance)).attrs["claims"]
    text = "\n".join(claims)
    assert "created='2020-01-01T00:00:00+0000'" in text and f"git commit='{'0' * 40}'" in text
    assert "each episode's tokens, latency_s, wall_s, error are the run's word" in text
    assert "tokens total 12" in text  # the edited costs, shown although run.json lists none
    assert "run.json holds fields no check covers, the run's word: ['reviewed_by', " \
        "'config.temperature']" in text


def test_extra_and_linked_files_in_the_run_folder_are_named(phase1, tmp_path):
    forged = _forge(phase1, tmp_path, lambda episodes: None)
    (forged / "audit.txt").write_text("every episode checked by hand\n")
    (forged / EPISODES_FILE).unlink()
    (forged / EPISODES_FILE).symlink_to(phase1 / "run" / EPISODES_FILE)
    text = "\n".join(_verified(forged).attrs["claims"])
    assert "the run folder holds files no check reads (nothing they say is verified): " \
        "['audit.txt']" in text
    assert "['episodes.jsonl'] are links to" in text


def test_whole_suites_and_splits_in_any_pool_are_not_hand_picked():
    """The demo's plan (every task in pool C, the held-out ones in pool D) names no choice;
    one split alone names none either; a suite less one task does."""
    from srelib.env.tasks.catalog import list_tasks
    from srelib.results.grid import hand_picked

    def keys(pool, tasks):  # as plans hold them: opaque ids
        return [("null", srelib.task_id(t), pool, "joint", 0) for t in tasks]

    every, heldout = list_tasks("classic"), list_tasks("classic", "heldout")
    assert hand_picked(keys("C", every) + keys("D", heldout)) is None
    assert hand_picked(keys("C", list_tasks("classic", "train"))) is None
    assert hand_picked(keys("C", every[1:])).startswith("tasks hand-picked: ")

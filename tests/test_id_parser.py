"""The id parser, a cheater: nothing a policy is handed names its task's answer.

A generated task used to be handed to policies (and shown in ``info``) as
``<family>.<culprit service>.<site>``: parsing it declared the right service and class on 95%
of train tasks. Every task is now handed as an opaque id (``srelib.env.tasks.ids``); the
family, culprit, shape and site live in the task card, which policies never get.
"""

from __future__ import annotations

import json
import re

import pytest

import srelib
from srelib.env.actions import FAULT_CLASSES, SERVICES, ActionType
from srelib.env.tasks.taskgen import FAMILIES
from srelib.policies.base import make_action
from srelib.runners.rollout import run_episode
from srelib.analysis.suite_tables import family_sample


def _tasks() -> list[str]:
    return [*srelib.list_tasks("classic"), *srelib.list_tasks("generated")]


def _parse(text: str) -> tuple[str | None, str | None]:
    """The service and fault class a string names, if any (the red team's parser)."""
    words = re.split(r"[^a-z0-9]+", text.lower())
    joined = "_".join(words)
    service = next((s for s in SERVICES if s in joined), None)
    fault = next((f for f in (*FAULT_CLASSES, *FAMILIES) if f in joined), None)
    return service, fault if fault in FAULT_CLASSES else None


class IdParserPolicy:
    """Declares at once the service and fault class it reads from its task id (``info`` holds
    nothing more: see the test above); with nothing to read, a declaration naming neither."""

    name = "id_parser"

    def __init__(self):
        self.found = []

    def __call__(self, observation, phase, task_name):
        service, fault = _parse(task_name)
        if service or fault:
            self.found.append((task_name, service, fault))
        return make_action(ActionType.DECLARE_ROOT_CAUSE, root_cause=f"read from {task_name}",
                           service=service, fault_class=fault)


def test_ids_are_opaque_unique_and_resolve_to_their_cards():
    tasks = _tasks()
    generated = srelib.list_tasks("generated")
    named = sum(_parse(t) == (srelib.task_card(t).culprit, srelib.task_card(t).fault_class)
                for t in generated)
    assert named >= 0.9 * len(generated)  # the parser reads the answer from a task's name
    ids = [srelib.task_id(t) for t in tasks]
    assert len(set(ids)) == len(tasks) and all(re.fullmatch(r"[cg]-[0-9a-f]{8}", i) for i in ids)
    assert all(_parse(i) == (None, None) for i in ids)
    for task, opaque in zip(tasks, ids):
        card = srelib.task_card(opaque)
        assert card.id == opaque and card.name == task and srelib.task_card(task) == card
        for field in (card.family, card.shape, card.site, card.story, card.culprit):
            assert field is None or field not in opaque
    card = srelib.task_card("memory_leak")
    assert (card.suite, card.split, card.culprit, card.bad_commit) == ("classic", "train", "orders",
                                                                       "a3f7c91")
    generated = srelib.task_card(srelib.list_tasks("generated", "heldout")[0])
    assert generated.suite == "generated" and generated.family in FAMILIES and generated.site
    with pytest.raises(ValueError, match="unknown task id"):
        srelib.task_card("g-00000000")


def test_swebench_instances_name_no_family_or_culprit():
    from srelib.integrations import swebench

    for task in family_sample(per_family=1):
        card = srelib.task_card(task)
        if card.split != "train" or not card.needs_fix:
            continue
        iid = swebench.instance_id(task)
        assert card.id in iid and swebench.task_of(iid) == task
        assert _parse(iid) == (None, None) and card.site not in iid


def test_nothing_in_info_names_the_task():
    for task in family_sample(per_family=1)[:8]:
        card = srelib.task_card(task)
        env = srelib.IncidentEnv()
        infos = [env.reset(task=task, pool="C" if card.split == "train" else "D", seed=1)[1]]
        infos.append(env.step({"action_type": "view_alerts"})[4])
        shown = json.dumps(infos)
        assert card.name not in shown and card.site not in shown and card.family not in shown
        assert all(info["task"] == card.id for info in infos)


@pytest.mark.parametrize("suite", ["classic", "generated"])
def test_the_id_parser_reads_nothing_and_scores_like_a_blank_declaration(suite):
    tasks = srelib.list_tasks(suite) if suite == "classic" else family_sample(per_family=2)
    parsed, blank = [], []
    for task in tasks:
        env = srelib.IncidentEnv()
        parser = IdParserPolicy()
        card = srelib.task_card(task)
        pool = "A" if card.split == "train" else None
        mode = None if pool else "p1_only"
        episode = run_episode(env, parser, task=task, pool=pool, mode=mode, seed=0)
        assert parser.found == [] and episode.task == card.id
        parsed.append(episode.final)
        control = run_episode(srelib.IncidentEnv(), lambda o, p, t: make_action(
            ActionType.DECLARE_ROOT_CAUSE, root_cause=f"read from {card.id}", service=None,
            fault_class=None), task=task, pool=pool, mode=mode, seed=0)
        blank.append(control.final)
    assert parsed == blank  # it reads nothing, so it plays the blank declaration
    assert sum(parsed) / len(parsed) <= 0.2
    assert sum(s > 0.35 for s in parsed) <= 0.1 * len(parsed)

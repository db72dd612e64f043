"""The surface red team (issue 28, requirement 10): policies that read one field of the page,
the deploy histories or the git log, or learn such fields' templates from the train tasks,
stay under the bar in every pool of both suites: a mean of at most 0.2, and at most 10% of the
tasks over 0.35 (0.6 on no-fault tasks). The rules are those of :mod:`srelib.analysis.shortcuts`, whose
hit rates its own tests hold under their ceiling."""

from __future__ import annotations

import pytest
from red_team_surface import TemplateLearner, pool_means, single_field_cheaters

from srelib.env.tasks.pools import TRAIN_TASKS
from srelib.analysis.tell_audit import classic_surfaces, surface

#: Generated tasks played per pool (train tasks in A-C, held-out in D), one seed each: enough
#: that one task over the bar is under the 10% share the bar allows.
PER_POOL = 20


def _maker(cheater):
    return lambda task: type(cheater)(cheater.name, cheater._culprit, cheater._commit,
                                      cheater._class, cheater._no_fault)


@pytest.mark.parametrize("suite", ["classic", "generated"])
@pytest.mark.parametrize("cheater", single_field_cheaters(), ids=lambda c: c.name)
def test_a_single_field_rule_stays_under_the_bar(cheater, suite):
    means = pool_means(_maker(cheater), suite, PER_POOL if suite == "generated" else None)
    assert all(m["ok"] for m in means.values()), means


@pytest.mark.parametrize("suite", ["classic", "generated"])
def test_the_template_learner_stays_under_the_bar(suite):
    if suite == "classic":
        train = [s for s in classic_surfaces((0,)) if s.task in TRAIN_TASKS]
    else:
        from srelib.env.tasks.taskgen import generated_suite

        train = [surface(t, 0) for t, i in generated_suite().tasks.items() if i.split == "train"]
    means = pool_means(lambda task: TemplateLearner(train, leave_out=task), suite,
                       PER_POOL if suite == "generated" else None)
    assert all(m["ok"] for m in means.values()), means


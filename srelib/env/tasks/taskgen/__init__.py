"""Generated tasks: fault families x culprit services x bug sites, admitted by validation.

A task id is ``<family>.<service>.<site>`` (classic ids never contain a dot); its repository is
``gen.<task id>``. :func:`build_scenario` and :func:`build_repo` build one task lazily from the
bases, shapes and recipes in this package; :func:`generated_suite` reads the admitted tasks and
the rejections by reason from an artefact in the package, ``suite.json`` (task cards, a digest,
the tell audit's findings), as long as it is this generator's. Admission plays policies on every
candidate, so the file is built above the environment: ``python -m srelib.analysis.suite_build``
rewrites it and the disk cache's packaged digests (:mod:`.cache`: an entry, a candidate's
derived tests, is used only if its digest is the one in ``suite_digest.json``). Same
GENERATOR_VERSION and id, same bytes, in any process.
"""

from __future__ import annotations

from .families import Family
from .family_lib import FAMILIES
from .recipes import GENERATOR_VERSION, Candidate, split_of
from .tasks import REPO_PREFIX, build_repo, build_scenario, candidate, is_generated_id


def candidates() -> dict[str, Candidate]:
    """Every candidate task the generator can build, by id (admitted or not)."""
    from .tasks import _candidates

    return dict(_candidates())


def generated_suite():
    """The admitted tasks and the rejections (a :class:`~.suite.SuiteReport`), read from the
    packaged ``suite.json``."""
    from .suite import generated_suite as _suite

    return _suite()


__all__ = ["FAMILIES", "Family", "GENERATOR_VERSION", "REPO_PREFIX", "Candidate",
           "build_repo", "build_scenario", "candidate", "candidates", "generated_suite",
           "is_generated_id", "split_of"]

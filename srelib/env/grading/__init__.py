"""Grading: the episode score, the patch pipeline, the guards on a patch (bug site, hidden-test
probes) and, below them, the verdict rules and the sandbox."""

from srelib.env.support.lazy import lazy_modules

__all__ = ["bug_site", "errors", "pipeline", "probe_run", "sandbox", "scenario_check", "score",
           "site_guard", "verdicts"]
__getattr__ = lazy_modules(__name__, __all__)

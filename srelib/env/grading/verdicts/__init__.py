"""Hidden-test verdicts: observing a probe, and SWE-bench's resolution rules over those
observations (shared by grading and the generator)."""

from srelib.env.support.lazy import lazy_modules

__all__ = ["observe", "rules"]
__getattr__ = lazy_modules(__name__, __all__)

"""The sandbox patch grading runs code in: the isolated command, its process, its share of the
machine, its system-call filter, a pre-started spare, and the probe runner it executes."""

from srelib.env.support.lazy import lazy_modules

__all__ = ["isolate", "process", "seccomp", "slots", "spare"]
__getattr__ = lazy_modules(__name__, __all__)

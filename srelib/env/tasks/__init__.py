"""Tasks: naming, finding and listing them (ids, cards, suites, splits, pools, the episode spec,
the suite key) and the generator with its packaged suite (``taskgen/``)."""

from srelib.env.support.lazy import lazy_modules

__all__ = ["catalog", "ids", "lookup", "pools", "spec", "surface", "taskgen"]
__getattr__ = lazy_modules(__name__, __all__)

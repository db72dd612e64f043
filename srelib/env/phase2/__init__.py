"""Phase 2: the code repositories (``repo_data/``) and the read-only workspace an agent patches one
in."""

from srelib.env.support.lazy import lazy_modules

__all__ = ["repos", "workspace"]
__getattr__ = lazy_modules(__name__, __all__)

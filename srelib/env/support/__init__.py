"""Support: stdlib-only helpers the environment's other rooms share (deep copies of JSON data,
memos bounded in bytes, a thread-safe ``ast.parse``, sub-packages whose modules load on first
use)."""

from srelib.env.support.lazy import lazy_modules

__all__ = ["ast_parse", "json_copy", "lazy", "memo"]
__getattr__ = lazy_modules(__name__, __all__)

"""srelib's version, in one place: the package, ``pyproject.toml`` (read at build time) and the
servers' metadata all take it from here."""

__version__ = "0.1.0"

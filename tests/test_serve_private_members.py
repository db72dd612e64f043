"""srelib serve reaches OpenEnv's private members in one module only (issue 29, item 5)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

openenv_server = pytest.importorskip("openenv.core.env_server")

SRELIB = Path(__file__).resolve().parents[1] / "srelib"
ADAPTER = SRELIB / "serve" / "sessions.py"


def _private_members() -> set[str]:
    """Names OpenEnv's server class defines that start with one underscore."""
    names = set()
    for cls in openenv_server.HTTPEnvServer.__mro__:
        names |= {n for n in vars(cls) if n.startswith("_") and not n.startswith("__")}
    server = openenv_server.HTTPEnvServer.__init__.__code__
    names |= {n for n in server.co_names if n.startswith("_") and not n.startswith("__")}
    return names


def _uses(path: Path, private: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted({f"{path.name}:{node.lineno} .{node.attr}" for node in ast.walk(tree)
                   if isinstance(node, ast.Attribute) and node.attr in private
                   and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))})


def test_only_the_adapter_touches_openenvs_private_members():
    private = _private_members()
    assert {"_sessions", "_create_session", "_destroy_session"} <= private
    found = [use for path in sorted(SRELIB.rglob("*.py")) if path != ADAPTER
             for use in _uses(path, private)]
    assert found == [], f"private OpenEnv members used outside {ADAPTER.name}: {found}"
    assert _uses(ADAPTER, private), "the adapter names the private members it uses"

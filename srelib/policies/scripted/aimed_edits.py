"""The edits an aimed repair proposes: line-level reverts and one local repair pattern.

A bad commit's change block mixes the lines that broke something with the feature's new
lines. :func:`line_units` cuts each block finer: every removed line is paired with the most
similar added line after the previous pair (:func:`pair_lines`), and each pair becomes its own
one-line :class:`Block`, so undoing it restores that one line and keeps the rest of the
feature. Signatures, docstrings and comments are never reverted (the feature's callers and
tests use the new signature); an assignment whose target was renamed keeps the new name and
gets the old value back (:func:`merge_line`). With ``restore`` a removed line with no partner
comes back too, where every name it reads is still bound in the file.

:func:`release_on_error` is a local repair pattern over one function: a cleanup call made after a
``try`` statement (``self.release(conn)``, ``pool.put(x)``) is also made in its handler that
re-raises, so the error path hands the resource back as the success path does.

Only the suspect commit's diff and the current files are read: no tests, no answer.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import re
from typing import Iterable

from srelib.policies.scripted.partial_revert import Block

#: Lines never reverted: definitions (the new signature is the feature's API), docstrings
#: and comments (they change no behaviour).
_KEEP = re.compile(r"^\s*(async\s+def|def|class)\s|^\s*(\"\"\"|'''|#|@)")
_ASSIGN = re.compile(r"^(\s*)([A-Za-z_][\w.]*)\s*=(?!=)\s*(.+)$")
_NAME = re.compile(r"(?<![\w.'\"])([A-Za-z_]\w*)")
#: Below this similarity a removed line has no partner among the added ones.
PAIR_RATIO = 0.5
_CLEANUP = re.compile(r"\b(release|close|put|give_back|unlock|return_conn|free|discard)\b")


def pair_lines(removed: tuple[str, ...], added: tuple[str, ...]) -> list[tuple[int, int | None]]:
    """For each removed line, the index of its partner among ``added`` (None: no partner).

    Partners keep their order: each one is the most similar added line after the previous
    partner, when the similarity (difflib ratio of the stripped lines) reaches
    :data:`PAIR_RATIO`.
    """
    pairs: list[tuple[int, int | None]] = []
    last = -1
    for i, line in enumerate(removed):
        best, partner = 0.0, None
        for j in range(last + 1, len(added)):
            ratio = difflib.SequenceMatcher(a=line.strip(), b=added[j].strip(),
                                            autojunk=False).ratio()
            if ratio > best:
                best, partner = ratio, j
        if partner is not None and best >= PAIR_RATIO:
            pairs.append((i, partner))
            last = partner
        else:
            pairs.append((i, None))
    return pairs


def merge_line(old: str, new: str) -> str:
    """The line to restore for the pair ``old`` -> ``new``: ``old``, except that an assignment
    whose target was renamed keeps the new target with the old value."""
    old_match, new_match = _ASSIGN.match(old), _ASSIGN.match(new)
    if old_match and new_match and old_match.group(2) != new_match.group(2):
        return f"{new_match.group(1)}{new_match.group(2)} = {old_match.group(3)}"
    return old


def line_units(blocks: Iterable[Block], *, restore: bool = False) -> list[Block]:
    """One-line reverts of ``blocks`` (see the module doc); with ``restore``, removed lines with
    no partner too. Each unit is a Block whose context is the block's lines around it."""
    units: list[Block] = []
    for block in blocks:
        pairs = pair_lines(block.removed, block.added)
        partners = [j for _, j in pairs]
        for i, j in pairs:
            old = block.removed[i]
            if not old.strip() or _KEEP.match(old) or (j is not None and not _revertible(old, block.added[j])):
                continue
            if j is not None:
                units.append(Block(block.path, block.before + block.added[:j],
                                   (merge_line(old, block.added[j]),), (block.added[j],),
                                   block.added[j + 1:] + block.after))
            elif restore:
                at = max((p + 1 for p in partners[:i] if p is not None), default=0)
                units.append(Block(block.path, block.before + block.added[:at], (old,), (),
                                   block.added[at:] + block.after))
    return units


def _revertible(old: str, new: str) -> bool:
    """Whether the pair ``old`` -> ``new`` may be undone line by line: not a kept line, not a
    move to another indentation (that restructures the code around it) and the same kind of
    statement (its leading keyword)."""
    if _KEEP.match(new) or old.strip() == new.strip():
        return False
    if len(old) - len(old.lstrip()) != len(new) - len(new.lstrip()):
        return False
    return _lead(old) == _lead(new)


def _lead(line: str) -> str:
    """A statement's leading keyword (``return``, ``if``, ...), or "" for any other statement."""
    import keyword

    word = re.match(r"\s*([A-Za-z_]\w*)", line)
    return word.group(1) if word and keyword.iskeyword(word.group(1)) else ""


def names_bound(text: str, line: str) -> bool:
    """Whether every name ``line`` reads is bound somewhere in ``text`` (assigned, defined,
    imported, a parameter) or is a builtin: a restored line must not read a name that the
    commit took away."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    bound = set(dir(builtins)) | {"self", "cls"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    code = re.sub(r"(\"[^\"]*\"|'[^']*')", "", line.split("#", 1)[0])
    return all(name in bound or _keyword(name) for name in _NAME.findall(code))


def _keyword(name: str) -> bool:
    import keyword

    return keyword.iskeyword(name) or keyword.issoftkeyword(name)


def release_on_error(text: str, first_line: int, last_line: int) -> str | None:
    """``text`` with :func:`release_on_error`'s pattern applied to the function spanning
    ``first_line``..``last_line`` (1-based), or None where the pattern does not apply."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    lines = text.split("\n")
    inserts: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try) or not first_line <= node.lineno <= last_line:
            continue
        cleanup = _cleanup_after(tree, node, lines)
        if cleanup is None:
            continue
        for handler in node.handlers:
            body = handler.body
            reraises = body and isinstance(body[-1], ast.Raise)
            already = any(cleanup.strip() == lines[n.lineno - 1].strip() for n in body)
            if reraises and not already:
                raise_line = body[-1].lineno
                indent = re.match(r"\s*", lines[raise_line - 1]).group(0)
                inserts.append((raise_line - 1, indent + cleanup.strip()))
    if not inserts:
        return None
    for at, line in sorted(inserts, reverse=True):
        lines.insert(at, line)
    return "\n".join(lines)


def _cleanup_after(tree: ast.AST, node: ast.Try, lines: list[str]) -> str | None:
    """The first cleanup call statement right after ``node`` in the same body, if any."""
    for parent in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(parent, field, None)
            if not isinstance(body, list) or node not in body:
                continue
            for stmt in body[body.index(node) + 1:]:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                    source = lines[stmt.lineno - 1]
                    if _CLEANUP.search(source) and stmt.lineno == stmt.end_lineno:
                        return source
            return None
    return None


def function_spans(text: str) -> dict[str, tuple[int, int]]:
    """Every function of ``text`` (Python) by qualified name (``Class.method``), with its
    1-based first and last line; empty when ``text`` does not parse."""
    spans: dict[str, tuple[int, int]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    spans[name] = (child.lineno, child.end_lineno or child.lineno)
                visit(child, name + ".")

    try:
        visit(ast.parse(text), "")
    except SyntaxError:
        return {}
    return spans

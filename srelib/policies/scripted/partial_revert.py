"""Hunk-level partial reverts: undo a suspect commit's edits to existing code, keep what it adds.

A feature commit that slips a bug in mostly *adds* code (the feature, which the PASS_TO_PASS
tests exercise) and *edits* a few existing lines; a blind revert (:mod:`srelib.policies.scripted.revert`)
loses the feature. :func:`change_blocks` cuts a commit's unified diff into change blocks (one
run of ``-``/``+`` lines with its context; an edit followed by new definitions is cut in two);
:func:`is_edit` picks the blocks that rewrite or delete existing lines without growing them
much; :func:`revert_blocks` undoes chosen blocks on the files as they are now (later commits
may have moved them), skipping any block whose text is no longer there, and returns the diff
that does it.

Only what an agent sees is used: the commit's diff and the current files. Nothing reads commit
messages, commit positions or the hidden tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from srelib.env.phase2.repos import unified_diff

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_DEFINITION = re.compile(r"^\s*(async\s+def|def|class)\s")
#: An edit block may add at most this many lines more than it removes.
EDIT_GROWTH = 2
#: The context lines on each side tried, after the whole context, to find a block that moved.
_CONTEXT_TRIES = (3, 1)


@dataclass(frozen=True)
class Block:
    """One change block of a commit: ``removed`` lines became ``added`` lines, between
    ``before`` and ``after`` context lines."""

    path: str
    before: tuple[str, ...]
    removed: tuple[str, ...]
    added: tuple[str, ...]
    after: tuple[str, ...]


def change_blocks(diff: str) -> list[Block]:
    """The change blocks of a git-style unified diff, in order (see :class:`Block`). Each hunk
    is read for as many lines as its header counts, so a removed line that looks like a file
    header stays a removed line."""
    blocks: list[Block] = []
    path: str | None = None
    lines = diff.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("+++ "):
            target = line[4:].strip().split("\t")[0]
            path = None if target == "/dev/null" else target.removeprefix("b/")
            continue
        match = _HUNK.match(line)
        if not match or path is None:
            continue
        old_left = int(match.group(2) or 1)
        new_left = int(match.group(4) or 1)
        hunk = []
        while i < len(lines) and (old_left > 0 or new_left > 0):
            body = lines[i] or " "  # a blank context line may lose its space
            i += 1
            if body[0] == "\\":  # "\ No newline at end of file"
                continue
            if body[0] not in " +-":
                break
            hunk.append(body)
            old_left -= body[0] in " -"
            new_left -= body[0] in " +"
        blocks += _hunk_blocks(path, hunk)
    return blocks


def _hunk_blocks(path: str, hunk: list[str]) -> list[Block]:
    lines = hunk
    blocks, i = [], 0
    while i < len(lines):
        if lines[i][0] == " ":
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j][0] != " ":
            j += 1
        removed = tuple(x[1:] for x in lines[i:j] if x[0] == "-")
        added = tuple(x[1:] for x in lines[i:j] if x[0] == "+")
        before = _context(lines[:i][::-1])[::-1]
        after = _context(lines[j:])
        cut = _new_definitions(added)
        if removed and cut < len(added):  # an edit, then new definitions: two blocks
            blocks.append(Block(path, before, removed, added[:cut], added[cut:] + after))
            blocks.append(Block(path, before + added[:cut], (), added[cut:], after))
        else:
            blocks.append(Block(path, before, removed, added, after))
        i = j
    return blocks


def _new_definitions(added: tuple[str, ...]) -> int:
    """Where a run of added lines turns into new definitions: the first blank line after which
    the next line starts a ``def`` or ``class``; ``len(added)`` when it never does."""
    for i, line in enumerate(added):
        rest = [x for x in added[i:] if x.strip()]
        if not line.strip() and rest and _DEFINITION.match(rest[0]):
            return i
    return len(added)


def _context(lines: list[str]) -> tuple[str, ...]:
    """The context lines next to a block, up to the next change."""
    out = []
    for line in lines:
        if line[0] != " ":
            break
        out.append(line[1:])
    return tuple(out)


def is_edit(block: Block) -> bool:
    """A block that rewrites or deletes existing lines without growing them by more than
    :data:`EDIT_GROWTH` lines: the kind of change that breaks existing behaviour (a rewrite
    that grows more is taken for new code, which the feature's tests need)."""
    return bool(block.removed) and len(block.added) <= len(block.removed) + EDIT_GROWTH


def revert_blocks(files: Mapping[str, str], blocks: Iterable[Block]) -> tuple[str, int]:
    """``(diff, reverted)``: the diff that undoes ``blocks`` on ``files`` (path -> current text)
    and how many blocks it undid. A block is undone where its added lines, with its context,
    occur exactly once in the current file; otherwise it is skipped."""
    changed = dict(files)
    reverted = 0
    for block in blocks:
        text = changed.get(block.path)
        if text is None:
            continue
        new = _undo(text, block)
        if new is not None:
            changed[block.path] = new
            reverted += 1
    touched = {p for p in changed if changed[p] != files.get(p)}
    before = {p: files[p] for p in touched}
    return unified_diff(before, {p: changed[p] for p in touched}), reverted


def locate(text: str, block: Block) -> int | None:
    """The 1-based line where ``block``'s added lines start in ``text`` (for a pure deletion:
    the line after the deleted ones would be): where its added lines occur exactly once with
    its whole context, else with less of it (later commits may have changed lines nearby).
    None when no amount of context makes the spot unique."""
    lines = text.split("\n")
    for keep in (None, *_CONTEXT_TRIES):
        before = block.before if keep is None else block.before[max(0, len(block.before) - keep):]
        want = [*before, *block.added, *(block.after if keep is None else block.after[:keep])]
        spots = [i for i in range(len(lines) - len(want) + 1) if lines[i:i + len(want)] == want]
        if want and len(spots) == 1:
            return spots[0] + len(before) + 1
    return None


def _undo(text: str, block: Block) -> str | None:
    start = locate(text, block)
    if start is None:
        return None
    lines = text.split("\n")
    lines[start - 1:start - 1 + len(block.added)] = list(block.removed)
    return "\n".join(lines)


def edit_blocks(diff: str) -> list[Block]:
    """The :func:`is_edit` blocks of ``diff`` outside test files: what a partial revert undoes."""
    from srelib.env.phase2.workspace import is_test_path

    return [b for b in change_blocks(diff) if not is_test_path(b.path) and is_edit(b)]

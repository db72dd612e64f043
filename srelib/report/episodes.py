"""The episodes of a report: each record's panes rendered once by the widgets' own renderers,
deduplicated within a chunk of episodes and gzip-compressed, for the page's script to open on
demand."""

from __future__ import annotations

import base64
import gzip
import json
import os
from typing import Any, Mapping, Sequence

from srelib.results.verify import Verification
from srelib.widgets.episode_panes import episode_header
from srelib.widgets.playback import RECORD_PANES, record_panes

#: Episodes per compressed chunk: the page unpacks one chunk (well under a megabyte) to show
#: an episode, and neighbouring episodes of a chunk share most of their fragments.
CHUNK_EPISODES = 128


#: A fragment is stored as an edit of an earlier one when they share at least this many
#: characters at their ends: ``[that fragment's index, shared prefix, shared suffix, the new
#: middle]``. The earlier one is the same pane's at the record before (a timeline that moves
#: its marker, a board that changes one service) or the last fragment that ends the same way
#: (the same logs or file another policy read, under another step's heading).
MIN_SHARED = 64
#: How many final characters make "ends the same way".
TAIL = 256


class _Fragments:
    """A chunk's table of distinct HTML fragments; each pane refers to one by its index."""

    def __init__(self):
        self.items: list[str | list] = []
        self.texts: list[str] = []
        self.index: dict[str, int] = {}
        self.by_tail: dict[str, int] = {}

    def ref(self, fragment: str, before: int | None = None) -> int:
        """The index of ``fragment``, added if new (as an edit of fragment ``before``, the
        same pane's at the record before, where they share enough)."""
        if fragment not in self.index:
            bases = {b for b in (before, self.by_tail.get(fragment[-TAIL:])) if b is not None}
            edits = [self._edit(fragment, base) for base in sorted(bases)]
            best = min(edits, key=lambda edit: len(edit[3]), default=None)
            self.index[fragment] = len(self.items)
            self.items.append(best if best is not None and len(fragment) - len(best[3]) >= MIN_SHARED
                              else fragment)
            self.texts.append(fragment)
            if len(fragment) >= TAIL:
                self.by_tail[fragment[-TAIL:]] = self.index[fragment]
        return self.index[fragment]

    def _edit(self, fragment: str, base: int) -> list:
        """``fragment`` as an edit of fragment ``base``."""
        old = self.texts[base]
        limit = min(len(old), len(fragment))
        head = len(os.path.commonprefix([old, fragment]))
        tail = len(os.path.commonprefix([old[head:][::-1], fragment[head:][::-1]]))
        tail = min(tail, limit - head)
        return [base, head, tail, fragment[head:len(fragment) - tail]]


def episode_panes(episode: dict, check: Verification | None, fragments: _Fragments) -> dict:
    """One episode as fragment references: its header, and per record the panes of
    :data:`RECORD_PANES` in that order. ``check`` is its replay (None: not replayed, so the
    records show without their results)."""
    steps = list(episode.get("steps") or [])
    if check is None:
        first, observations, note = None, [None] * len(steps), "not replayed: results not shown"
    else:
        first, observations = check.first_observation, list(check.observations)
        note = None if check.records_match else (
            f"replay diverged: {check.problems[0]}; later records show what was stored only")
    records: list[list[int]] = []
    for i in range(len(steps)):
        panes = record_panes(episode, first, observations, note, i)
        before = records[-1] if records else [None] * len(RECORD_PANES)
        records.append([fragments.ref(panes[name], before[k])
                        for k, name in enumerate(RECORD_PANES)])
    return {"h": fragments.ref(episode_header(episode)), "s": records}


def packed_chunks(episodes: Sequence[dict], checks: Mapping[tuple, Verification],
                  keys: Sequence[tuple]) -> tuple[list[str], list[tuple[int, int]]]:
    """The episodes packed for the page, and where each one is.

    Episodes of one incident (task, pool, mode and seed: every policy that played it) go to
    the same chunk, so the fragments they share (the incident, the first boards, the logs that
    the same action shows) are stored once.

    Returns:
        ``(chunks, places)``: :data:`CHUNK_EPISODES` episodes a chunk, each chunk base64 of
        gzip of ``{"f": fragments, "e": [episode_panes, ...]}`` (byte-identical for the same
        run), and per episode ``(chunk, position in it)``, in the order given.
    """
    order = sorted(range(len(episodes)), key=lambda i: (*map(str, keys[i][1:]), str(keys[i][0])))
    chunks: list[str] = []
    places: list[tuple[int, int]] = [(0, 0)] * len(episodes)
    for start in range(0, len(order), CHUNK_EPISODES):
        fragments = _Fragments()
        batch = []
        for i in order[start:start + CHUNK_EPISODES]:
            places[i] = (len(chunks), len(batch))
            batch.append(episode_panes(episodes[i], checks.get(keys[i]), fragments))
        chunks.append(_pack(fragments.items, batch))
    return chunks, places


def _pack(fragments: list[str], episodes: list[dict[str, Any]]) -> str:
    text = json.dumps({"f": fragments, "e": episodes}, separators=(",", ":"))
    return base64.b64encode(gzip.compress(text.encode(), compresslevel=9, mtime=0)).decode()

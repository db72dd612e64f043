"""Key/value caches kept across chat turns, for batched local generation.

A chat transcript mostly grows by appending: each turn adds the model's reply and the next
observation. :class:`PrefixCache` keeps, for every sequence a ``generate`` call produced, the
token ids and a batch-of-one ``transformers.DynamicCache`` holding their keys and values. The
next prompt is matched by tokens: the longest common prefix with a kept sequence (its own
lane's last turn, or the shared system-prompt prefix for a new lane) is reused and only the
rest is prefilled. A prompt whose history was trimmed diverges right after the part that did
not change, so the cache is cut back there and the rest is encoded once. Reuse never depends
on bookkeeping being right: only identical tokens at identical positions share keys/values.

:func:`plan_rows` decides, per bucket of prompts, how many tokens each row takes from the
cache so that every row prefills the same number of tokens: rows are then left-padded only,
as ``generate`` expects, and the distance between any two real tokens is the same as in an
uncached run (which sliding-window attention depends on). :func:`merge` and :func:`split`
move between one-row caches and the batched ``DynamicCache`` that ``generate`` extends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

#: A lane whose prompt needs more than this many times the prefill of the bucket's first row
#: (plus ``BUCKET_SLACK`` tokens) starts a new bucket, rather than making every row re-encode
#: that much: e.g. a lane whose history was just trimmed, among lanes that only append.
BUCKET_SPREAD = 4
BUCKET_SLACK = 64


@dataclass
class CachedSequence:
    """Token ids and a one-row ``DynamicCache`` with the keys/values of exactly those ids."""

    ids: Any  # 1-D LongTensor on the CPU
    cache: Any  # transformers.DynamicCache, batch size 1, ``len(ids)`` positions

    def __len__(self) -> int:
        return int(self.ids.shape[0])


def common_prefix(a, b) -> int:
    """The number of leading tokens two 1-D id tensors share."""
    n = min(a.shape[0], b.shape[0])
    if n == 0:
        return 0
    differs = (a[:n] != b[:n]).nonzero()
    return int(differs[0, 0]) if differs.numel() else n


class PrefixCache:
    """The sequences of the latest ``generate`` call, plus one pinned shared prefix."""

    def __init__(self):
        self.shared: CachedSequence | None = None
        self.shared_key: str | None = None
        self.entries: list[CachedSequence] = []

    def best(self, ids) -> tuple[CachedSequence | None, int]:
        """The kept sequence sharing the longest prefix with ``ids``, and that length."""
        found, length = None, 0
        for entry in ([self.shared] if self.shared else []) + self.entries:
            n = common_prefix(entry.ids, ids)
            if n > length:
                found, length = entry, n
        return found, length


@dataclass
class Row:
    """One prompt of a bucket: its ids, the sequence it reuses and how many tokens of it."""

    item: int
    ids: Any
    source: CachedSequence | None
    reuse: int  # tokens taken from ``source`` (at most len(ids) - 1: one token must be fed)

    @property
    def needed(self) -> int:
        return int(self.ids.shape[0]) - self.reuse


def buckets(rows: Sequence[Row], max_rows: int) -> list[list[Row]]:
    """Rows grouped for one ``generate`` call each: similar prefill lengths together."""
    groups: list[list[Row]] = []
    for row in sorted(rows, key=lambda r: (r.needed, r.item)):
        if (groups and len(groups[-1]) < max_rows
                and row.needed <= BUCKET_SPREAD * groups[-1][0].needed + BUCKET_SLACK):
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def plan_rows(bucket: Sequence[Row]) -> tuple[int, int, list[int]]:
    """``(past, width, pasts)``: the batched cache length, the prefill width and each row's
    cached length. Every row prefills ``width`` tokens (fewer only when it is shorter), so a
    row may re-encode a few tokens it has cached rather than be padded in the middle."""
    width = max(row.needed for row in bucket)
    pasts = [max(0, int(row.ids.shape[0]) - width) for row in bucket]
    return max(pasts), width, pasts


def merge(bucket: Sequence[Row], past: int, pasts: Sequence[int], config: Any):
    """One batched ``DynamicCache`` of ``past`` positions, each row left-padded with zeros
    (masked out by the attention mask); an empty one when no row reuses anything.

    Its layers follow the model's ``config`` (sliding-window layers attend only to their
    window) with past recording on, so every layer still keeps the whole sequence and the
    rows can be split off and cut back later.
    """
    import torch
    from transformers import DynamicCache

    cache = DynamicCache(config=config)
    cache.activate_past_recording()
    if past == 0:
        return cache
    template = next(row.source.cache.layers for row, n in zip(bucket, pasts) if n)
    for index, layer in enumerate(template):
        keys, values = [], []
        for row, n in zip(bucket, pasts):
            for parts, tensor in ((keys, "keys"), (values, "values")):
                if n:
                    part = getattr(row.source.cache.layers[index], tensor)[..., :n, :]
                else:
                    part = getattr(layer, tensor)[..., :0, :]
                pad = past - n
                parts.append(torch.nn.functional.pad(part, (0, 0, pad, 0)) if pad else part)
        cache.layers[index].update(torch.cat(keys), torch.cat(values))
    return cache


def split(cache, row: int, start: int, length: int):
    """Row ``row`` of a batched cache, positions ``start .. start + length``, as its own cache
    (views of the batched tensors, not copies)."""
    from transformers import DynamicCache

    return DynamicCache([(layer.keys[row:row + 1, :, start:start + length, :],
                          layer.values[row:row + 1, :, start:start + length, :])
                         for layer in cache.layers])

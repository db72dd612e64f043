"""Key/value caches kept across chat turns, for batched local generation.

A chat transcript mostly grows by appending: each turn adds the model's reply and the next
observation. :class:`PrefixCache` keeps, for every sequence a ``generate`` call produced, the
token ids and their keys and values. The next prompt is matched by tokens: the longest common
prefix with a kept sequence (its own lane's last turn, or the shared system-prompt prefix for a
new lane) is reused and only the rest is prefilled. A prompt whose history was trimmed diverges
right after the part that did not change, so the cache is cut back there and the rest is
encoded once. Reuse never depends on bookkeeping being right: only identical tokens at
identical positions share keys/values.

:func:`plan_rows` decides, per bucket of prompts, how many tokens each row takes from the
cache so that every row prefills the same number of tokens: rows are then left-padded only,
as ``generate`` expects, and the distance between any two real tokens is the same as in an
uncached run (which sliding-window attention depends on).

:func:`batch_cache` gives ``generate`` a cache whose keys/values live in one buffer for all
layers, sized for the whole call (past, prefill and new tokens): each step writes its token in
place instead of concatenating every layer's whole sequence again, and a sliding-window layer
hands attention only its window while the buffer keeps every position, so that any prefix can
be reused next turn. :meth:`Batch.row` cuts a row back out (views, not copies).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Sequence

from srelib.extras import require

#: A lane whose prompt needs more than this many times the prefill of the bucket's first row
#: (plus ``BUCKET_SLACK`` tokens) starts a new bucket, rather than making every row re-encode
#: that much: e.g. a lane whose history was just trimmed, among lanes that only append.
BUCKET_SPREAD = 4
BUCKET_SLACK = 64


@dataclass
class CachedSequence:
    """Token ids and the keys/values of exactly those ids, every layer in one tensor."""

    ids: Any  # 1-D LongTensor on the CPU
    keys: Any  # (layers, 1, kv heads, len(ids), head dim), on the model's device
    values: Any

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


@dataclass
class Batch:
    """The cache handed to ``generate`` and the buffers its layers write into."""

    cache: Any  # transformers.DynamicCache whose layers are buffer views
    keys: Any  # (layers, rows, kv heads, capacity, head dim)
    values: Any

    def row(self, row: int, start: int, ids) -> CachedSequence:
        """Row ``row``'s positions ``start .. start + len(ids)`` (views of the buffers)."""
        end = start + int(ids.shape[0])
        return CachedSequence(ids, self.keys[:, row:row + 1, :, start:end],
                              self.values[:, row:row + 1, :, start:end])


def batch_cache(bucket: Sequence[Row], past: int, pasts: Sequence[int], capacity: int,
                config: Any, like: Any) -> Batch:
    """A cache of ``len(bucket)`` rows with room for ``capacity`` positions, holding ``past``
    of them: each row's ``pasts[r]`` reused positions, left-padded with zeros (masked out by
    the attention mask; zeros, as masked garbage could be NaN). ``like`` is a tensor of the
    model's dtype and device."""
    require("transformers", "srelib.policies.llm.kv_cache")
    from transformers import DynamicCache

    text = config.get_text_config(decoder=True)
    heads = text.num_key_value_heads
    dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    shape = (text.num_hidden_layers, len(bucket), heads, capacity, dim)
    keys, values = like.new_empty(shape), like.new_empty(shape)
    for r, (row, n) in enumerate(zip(bucket, pasts)):  # one copy per row for all layers
        for buffer, source in ((keys, row.source and row.source.keys),
                               (values, row.source and row.source.values)):
            buffer[:, r, :, :past - n] = 0  # positions past ``past`` are written before read
            if n:
                buffer[:, r, :, past - n:past] = source[:, 0, :, :n]
    cache = DynamicCache(config=text)
    layer = _buffer_layer()
    cache.layers = [layer(keys[i], values[i], past, getattr(model_layer, "sliding_window", None))
                    for i, model_layer in enumerate(cache.layers)]
    return Batch(cache, keys, values)


@functools.cache
def _buffer_layer():
    """The cache layer class (built on first use, as transformers is imported lazily)."""
    require("transformers", "srelib.policies.llm.kv_cache")
    from transformers.cache_utils import DynamicLayer

    class BufferLayer(DynamicLayer):
        """One layer's keys/values in a preallocated buffer: ``update`` writes the new
        positions in place; a sliding-window layer returns only its window, as
        ``DynamicSlidingWindowLayer`` does, while the buffer keeps every position."""

        def __init__(self, keys, values, length: int, window: int | None):
            super().__init__()
            self.buffer_keys, self.buffer_values = keys, values
            self.length, self.window = length, window
            self.is_sliding = window is not None
            self.device, self.is_initialized = keys.device, True
            self.keys, self.values = keys[..., :length, :], values[..., :length, :]

        def update(self, key_states, value_states, *args, **kwargs):
            start, end = self.length, self.length + key_states.shape[-2]
            self.buffer_keys[..., start:end, :] = key_states
            self.buffer_values[..., start:end, :] = value_states
            self.length = end
            self.keys = self.buffer_keys[..., :end, :]
            self.values = self.buffer_values[..., :end, :]
            first, _ = self._span(key_states.shape[-2], start)
            return self.keys[..., first:, :], self.values[..., first:, :]

        def _span(self, query: int, past: int) -> tuple[int, int]:
            """(first visible position, visible length) for ``query`` new positions."""
            if self.window is None:
                return 0, past + query
            first = max(past - self.window + 1, 0)
            return first, past + query - first

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            first, visible = self._span(query_length, self.length)
            return visible, first

        def get_seq_length(self) -> int:
            return self.length

        def get_max_length(self) -> int:
            return self.window or -1

    return BufferLayer

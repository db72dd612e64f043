"""The kept-KV-cache operations of one chat turn at Gemma-3-1B's cache shapes, on the CPU.

No model: random keys/values of the 1 B config's shapes (26 layers, 1 key/value head, head
dim 256, 4 query heads, sliding window 512 on five layers of six) go through what a turn of
``HFTransformersChatPolicy`` does to its caches: build the batched cache from each lane's kept
sequence (``kv_cache.batch_cache``), write the prefill, then per new token write one position
per layer and attend to what the layer returns (``scaled_dot_product_attention``, so a layout
that makes attention copy shows), and finally cut each lane's sequence back out. The same
per-token loop runs on transformers' ``DynamicCache`` built from the config, with past
recording (the kept-cache path before this bench: every layer grows by concatenation) and
without (``generate``'s default when nothing is kept). Reports ms per turn and per token.

    python bench/bench_kv_cache.py --lanes 1 8 --prompt 3400 --tokens 16
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row, base_parser, report  # noqa: E402
from gpu_gemma import GEMMA3_1B  # noqa: E402

HEADS, KV_HEADS, DIM, LAYERS = 4, 1, 256, 26


def kept_sequence(length: int, dtype):
    """A lane's kept sequence of ``length`` random positions."""
    import torch

    from srelib.policies.llm.kv_cache import CachedSequence

    shape = (LAYERS, 1, KV_HEADS, length, DIM)
    return CachedSequence(torch.arange(length), torch.randn(shape, dtype=dtype),
                          torch.randn(shape, dtype=dtype))


def decode(cache, lanes: int, tokens: int, dtype) -> float:
    """Seconds for ``tokens`` steps: each layer stores one position per lane and is attended."""
    import torch
    from torch.nn.functional import scaled_dot_product_attention as attend

    new = torch.randn(lanes, KV_HEADS, 1, DIM, dtype=dtype)
    query = torch.randn(lanes, HEADS, 1, DIM, dtype=dtype)
    start = time.perf_counter()
    for _ in range(tokens):
        for index in range(LAYERS):
            keys, values = cache.update(new, new, index)
            attend(query, keys, values, enable_gqa=True)
    return time.perf_counter() - start


def turn(lanes: int, prompt: int, appended: int, tokens: int, config, dtype) -> dict:
    """Milliseconds for each part of one turn with kept caches (``batch_cache``)."""
    import torch

    from srelib.policies.llm import kv_cache

    rows = [kv_cache.Row(i, torch.arange(prompt + appended), kept_sequence(prompt - 3 * i, dtype),
                         prompt - 3 * i) for i in range(lanes)]
    past, width, pasts = kv_cache.plan_rows(rows)
    total = past + width
    like = torch.zeros((), dtype=dtype)
    timed = {}
    start = time.perf_counter()
    batch = kv_cache.batch_cache(rows, past, pasts, total + tokens, config, like)
    timed["merge"] = time.perf_counter() - start
    fill = torch.randn(lanes, KV_HEADS, width, DIM, dtype=dtype)
    start = time.perf_counter()
    for index in range(LAYERS):
        batch.cache.update(fill, fill, index)
    timed["prefill_write"] = time.perf_counter() - start
    timed["decode"] = decode(batch.cache, lanes, tokens, dtype)
    start = time.perf_counter()
    for r in range(lanes):
        batch.row(r, total - (prompt + appended), torch.arange(prompt + appended + tokens - 1))
    timed["split"] = time.perf_counter() - start
    return {k: 1e3 * v for k, v in timed.items()}


def dynamic_decode(lanes: int, prompt: int, tokens: int, config, dtype, record: bool) -> float:
    """Milliseconds per token on transformers' ``DynamicCache`` holding ``prompt`` positions."""
    import torch
    from transformers import DynamicCache

    cache = DynamicCache(config=config)
    if record:
        cache.activate_past_recording()
    past = torch.randn(lanes, KV_HEADS, prompt, DIM, dtype=dtype)
    for index in range(LAYERS):
        cache.update(past, past, index)
    return 1e3 * decode(cache, lanes, tokens, dtype) / tokens


def run(lanes_list, prompt: int, appended: int, tokens: int) -> list[Row]:
    import torch
    from transformers import Gemma3TextConfig

    config = Gemma3TextConfig(**GEMMA3_1B)
    dtype = torch.float32
    note = f"{prompt}-token prompts, {appended} appended, {tokens} new tokens, fp32"
    rows = []
    turn(1, 600, 40, 2, config, dtype)  # warm-up
    for lanes in lanes_list:
        timed = turn(lanes, prompt, appended, tokens, config, dtype)
        per_turn = timed["merge"] + timed["prefill_write"] + timed["split"]
        rows += [Row("kv_cache", f"{lanes} lanes: merge + prefill write + split per turn",
                     per_turn, "ms", note=note if lanes == lanes_list[0] else ""),
                 Row("kv_cache", f"{lanes} lanes: merge per turn", timed["merge"], "ms"),
                 Row("kv_cache", f"{lanes} lanes: buffer cache, per token",
                     timed["decode"] / tokens, "ms")]
        for record, name in ((True, "DynamicCache with past recording (before)"),
                             (False, "DynamicCache, sliding layers bounded (re-encode path)")):
            rows.append(Row("kv_cache", f"{lanes} lanes: {name}, per token",
                            dynamic_decode(lanes, prompt, tokens, config, dtype, record), "ms"))
    return rows


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--prompt", type=int, default=3400, help="kept tokens per lane")
    parser.add_argument("--appended", type=int, default=200, help="new prompt tokens per lane")
    parser.add_argument("--tokens", type=int, default=16, help="new tokens per turn")
    args = parser.parse_args(argv)
    rows = run(args.lanes, args.prompt, args.appended, args.tokens)
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()

"""GPU throughput of batched rollouts with a random-initialised Gemma-3-1B-architecture model.

No download: the model is built from a Gemma-3-1B text config written out below (hidden 1152,
26 layers, 4 query heads, 1 key/value head, head_dim 256, MLP 6912, vocab 262144, 512-token
sliding window on five of every six layers), in bf16 on a GPU with native bf16 (compute
capability 8.0 or newer), else fp32 (``resolve_dtype("auto")``; never fp16). The
tokenizer is the tiny offline one from ``srelib.training.tiny_model.tiny_chat_model``; the model's ids are
mapped into its vocabulary modulo its size before decoding. For each batch size, that many
joint episodes run in lockstep through ``HFTransformersChatPolicy.act_batch``
(``srelib.runners.lockstep.run_lockstep``), once per ``--kv-caches`` setting: kept KV caches
(``true``: each step prefills only the new turn), re-encoding every prompt (``false``) and
``auto`` (the policy's default, which picks one for the device; the row says which), and
``static`` on request (re-encoding into a static cache, which ``generate`` compiles on CUDA). A random
model's replies do not parse, so each episode ends after the policy's ``max_failures`` (3)
steps: every step generates up to ``--max-new-tokens`` tokens per episode (fewer where a lane's
reply happens to close a JSON object, the same lanes in every setting). Reports generated
tokens/s, episodes/min, prompt and prefilled tokens and peak GPU memory per run as JSON, on
stdout and in ``$OUT/gpu_bench.json`` when ``OUT`` is set.

    python bench/gpu_gemma.py                 # on a GPU machine; well under 4 minutes on an H200
    python bench/gpu_gemma.py --tiny          # a tiny config on the CPU, to check the script
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

# A GPU machine gets the working tree, not an installed srelib: import it from the tree.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: Gemma-3-1B's text model (google/gemma-3-1b-pt config.json), as Gemma3TextConfig kwargs.
GEMMA3_1B = dict(
    vocab_size=262_144, hidden_size=1152, intermediate_size=6912, num_hidden_layers=26,
    num_attention_heads=4, num_key_value_heads=1, head_dim=256, query_pre_attn_scalar=256,
    sliding_window=512, max_position_embeddings=32_768, rms_norm_eps=1e-6,
    hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
    layer_types=["full_attention" if (i + 1) % 6 == 0 else "sliding_attention"
                 for i in range(26)],
    rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
                     "full_attention": {"rope_type": "default", "rope_theta": 1_000_000.0}},
)
#: A few-layer stand-in with the same shape of config, for checking the script on a CPU.
TINY = dict(GEMMA3_1B, vocab_size=4096, hidden_size=64, intermediate_size=128,
            num_hidden_layers=2, num_attention_heads=2, head_dim=32, query_pre_attn_scalar=32,
            sliding_window=64, max_position_embeddings=8192,
            layer_types=["sliding_attention", "full_attention"])


class ModuloTokenizer:
    """A tokenizer view whose ``batch_decode`` maps ids from a larger vocabulary into its own."""

    def __init__(self, tokenizer):
        object.__setattr__(self, "_inner", tokenizer)
        object.__setattr__(self, "_size", len(tokenizer))

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def __setattr__(self, name, value):
        setattr(self._inner, name, value)

    def __call__(self, *args, **kwargs):
        return self._inner(*args, **kwargs)

    def __len__(self) -> int:
        return self._size

    def batch_decode(self, sequences, **kwargs):
        return self._inner.batch_decode(sequences % self._size, **kwargs)


def build_model(config_kwargs: dict, tokenizer, device: str, dtype):
    """A random-initialised Gemma3ForCausalLM on ``device`` in ``dtype``."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    config = Gemma3TextConfig(**config_kwargs, pad_token_id=tokenizer.pad_token_id,
                              bos_token_id=tokenizer.bos_token_id,
                              eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = Gemma3ForCausalLM(config)
    finally:
        torch.set_default_dtype(default)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model.eval()


def describe_run(tiny: bool, params: int, dtype) -> dict:
    """The head of a GPU script's summary: which model, where, with which libraries."""
    import torch
    import transformers

    return {"model": "tiny Gemma3 config" if tiny else "Gemma-3-1B architecture, random init",
            "params": params,
            "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
            "dtype": str(dtype), "torch": torch.__version__,
            "transformers": transformers.__version__}


def emit(summary: dict, filename: str) -> dict:
    """Print ``summary`` as JSON and write it to ``$OUT/filename`` when ``OUT`` is set."""
    text = json.dumps(summary, indent=2)
    print(text)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], filename).write_text(text)
    return summary


def rollouts(policy, batch_size: int, max_steps: int) -> dict:
    """Run ``batch_size`` joint episodes in lockstep; their wall time, tokens and throughput."""
    import torch

    import srelib
    from srelib.runners.lockstep import run_lockstep
    from srelib.runners.rollout import EpisodeJob

    jobs = [EpisodeJob("gemma3-1b-random", srelib.TASKS[n % len(srelib.TASKS)], None, "joint", n)
            for n in range(batch_size)]
    mark = len(policy.usage)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    episodes = run_lockstep(policy, jobs, max_steps=max_steps)
    wall = time.perf_counter() - start
    errors = [e.error for e in episodes if e.error]
    if errors:
        raise RuntimeError(f"{len(errors)} episodes failed; first:\n{errors[0]}")
    records = policy.usage[mark:]
    generated = sum(r["completion_tokens"] or 0 for r in records)
    prompt = sum(r["prompt_tokens"] or 0 for r in records)
    peak = torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None
    return {"batch_size": batch_size, "kv_cache_setting": policy.kv_cache_setting,
            "kv_cache": policy.kv_cache, "static_cache": policy.static_cache,
            "wall_s": round(wall, 3),
            "steps": sum(1 for e in episodes for r in e.steps if r["step"] > 0),
            "generated_tokens": generated, "prompt_tokens": prompt,
            "prefill_tokens": sum(r["prefill_tokens"] for r in records),
            "peak_gpu_gib": None if peak is None else round(peak, 2),
            "tokens_per_s": round(generated / wall, 1),
            "episodes_per_min": round(60 * batch_size / wall, 1)}


def bench(tiny: bool, batch_sizes: list[int], kv_caches: list, max_new_tokens: int,
          max_steps: int = 3, obs_chars: int = 1500, model_dir: str | None = None) -> dict:
    """Build the model, warm each policy up with one step, then time ``rollouts`` for every
    batch size and kv_cache setting; the summary as a dict."""
    import torch
    from transformers import AutoTokenizer

    from srelib.policies.llm.providers.hf_chat import HFTransformersChatPolicy, resolve_dtype
    from srelib.training.tiny_model import tiny_chat_model

    started = time.perf_counter()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = resolve_dtype("auto")
    tokenizer = AutoTokenizer.from_pretrained(tiny_chat_model(
        model_dir or Path(tempfile.gettempdir()) / "srelib-bench-tiny-model"))
    model = build_model(TINY if tiny else GEMMA3_1B, tokenizer, device, dtype)
    built = time.perf_counter() - started
    policies = [HFTransformersChatPolicy(
        model=model, tokenizer=ModuloTokenizer(tokenizer), temperature=0.0,
        max_new_tokens=max_new_tokens, obs_chars=obs_chars, max_history=4,
        max_prompt_chars=4 * obs_chars, max_batch_size=max(batch_sizes),
        kv_cache=False if setting == "static" else setting, static_cache=setting == "static",
        name="gemma3-1b") for setting in kv_caches]
    for policy in policies:
        rollouts(policy, 1, 1)  # warm-up: kernels, allocator
    results = []
    for b in batch_sizes:
        for policy in policies:
            results.append(rollouts(policy, b, max_steps))
            print(f"gpu_gemma: {json.dumps(results[-1])}", flush=True)
    return {**describe_run(tiny, sum(p.numel() for p in model.parameters()), dtype),
            "max_new_tokens": max_new_tokens, "max_steps": max_steps, "obs_chars": obs_chars,
            "build_s": round(built, 1), "results": results,
            "total_s": round(time.perf_counter() - started, 1)}


def kv_setting(text: str):
    """``true``/``false``/``auto`` as the policy's ``kv_cache`` argument; ``static`` as is."""
    return {"true": True, "false": False, "auto": "auto", "static": "static"}[text]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny config (CPU check)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=None)
    parser.add_argument("--kv-caches", type=kv_setting, nargs="+", default=[True, False, "auto"],
                        metavar="{true,false,auto,static}")
    parser.add_argument("--max-new-tokens", type=int, default=None)
    parser.add_argument("--max-steps", type=int, default=3, help="step cap per episode")
    parser.add_argument("--obs-chars", type=int, default=1500, help="observation text per turn")
    parser.add_argument("--model-dir", help="where to build (or reuse) the tiny tokenizer")
    args = parser.parse_args(argv)
    summary = bench(args.tiny, args.batch_sizes or ([1, 2, 4] if args.tiny else [1, 8, 32]),
                    args.kv_caches, args.max_new_tokens or (8 if args.tiny else 64),
                    args.max_steps, args.obs_chars, args.model_dir)
    return emit(summary, "gpu_bench.json")


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

"""Expected GPU memory and time of a local-model run, worked out from the model's shape and
the GPU's data sheet. These are estimates, not measurements (``bench/gpu_gemma.py`` measures
on a real GPU); notebook 05 prints one before it loads anything.

The model follows the dtype rule of :func:`srelib.policies.llm.providers.hf_chat.resolve_dtype`: bf16 on a
GPU of compute capability 8.0 or newer, else fp32. Kept KV caches hold every layer's keys and
values for the whole conversation. A lockstep step prefills one new turn per lane (compute
bound) and then decodes up to ``new_tokens`` tokens, each reading the weights and the caches
once (memory bound); the efficiencies below are round figures, not fitted to anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Fraction of the data-sheet compute and bandwidth a batched ``generate`` reaches (assumed).
COMPUTE_EFFICIENCY = 0.4
BANDWIDTH_EFFICIENCY = 0.7
#: CUDA context, allocator slack and prefill activations, in GiB (assumed).
WORKSPACE_GIB = 1.5


@dataclass(frozen=True)
class GPU:
    """Data-sheet figures of one GPU class (dense tensor throughput)."""

    name: str
    memory_gib: float
    bandwidth_gbs: float
    fp32_tflops: float
    bf16_tflops: float | None  # None: no native bf16
    capability: tuple[int, int]


GPUS = {gpu.name: gpu for gpu in (
    GPU("T4", 15.0, 320, 8.1, None, (7, 5)),
    GPU("L4", 22.0, 300, 30.3, 121.0, (8, 9)),
    GPU("A100-40GB", 40.0, 1555, 19.5, 312.0, (8, 0)),
    GPU("H100-80GB", 80.0, 3350, 67.0, 989.0, (9, 0)),
)}


@dataclass(frozen=True)
class ModelShape:
    """What memory and time depend on: parameters and the key/value layout."""

    name: str
    params: float
    layers: int
    kv_heads: int
    head_dim: int


MODELS = {shape.name: shape for shape in (
    ModelShape("google/gemma-3-1b-it", 1.0e9, 26, 1, 256),
    ModelShape("google/gemma-3-4b-it", 3.9e9, 34, 4, 256),
)}


def gpu_class(device_name: str) -> GPU | None:
    """The GPU class whose name appears in a CUDA device name ("Tesla T4" -> T4)."""
    upper = device_name.upper()
    for name, gpu in GPUS.items():
        if name.split("-")[0] in upper:
            return gpu
    return None


def estimate_run(gpu: GPU, model: ModelShape, *, episodes: int, batch_size: int, steps: int,
                 prompt_tokens: int, turn_tokens: int, new_tokens: int) -> dict:
    """Peak memory and wall time of ``episodes`` episodes in lockstep batches.

    ``prompt_tokens`` is the longest conversation a lane holds, ``turn_tokens`` what one
    step appends (the new observation), ``new_tokens`` the reply limit per step.
    """
    if min(episodes, batch_size, steps, prompt_tokens, new_tokens) < 1 or turn_tokens < 0:
        raise ValueError("episodes, batch_size, steps, prompt_tokens and new_tokens must be "
                         ">= 1 and turn_tokens >= 0")
    bf16 = gpu.bf16_tflops is not None and gpu.capability >= (8, 0)
    width = 2 if bf16 else 4
    lanes = min(batch_size, episodes)
    weights = model.params * width
    caches = lanes * (prompt_tokens + new_tokens) * model.layers * 2 * model.kv_heads \
        * model.head_dim * width
    memory_gib = (weights + caches) / 2**30 + WORKSPACE_GIB
    flops = (gpu.bf16_tflops if bf16 else gpu.fp32_tflops) * 1e12 * COMPUTE_EFFICIENCY
    prefill_s = 2 * model.params * lanes * turn_tokens / flops
    decode_s = new_tokens * (weights + caches) / (gpu.bandwidth_gbs * 1e9 * BANDWIDTH_EFFICIENCY)
    batches = math.ceil(episodes / lanes)
    return {"gpu": gpu.name, "model": model.name, "dtype": "bfloat16" if bf16 else "float32",
            "lanes": lanes, "memory_gib": round(memory_gib, 1),
            "fits": memory_gib <= gpu.memory_gib,
            "seconds": round(batches * steps * (prefill_s + decode_s))}

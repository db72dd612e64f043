"""srelib.analysis.estimates: the memory and time notebook 05 announces before loading a model."""

import pytest

from srelib.analysis.estimates import GPUS, MODELS, estimate_run, gpu_class

GEMMA_1B, GEMMA_4B = MODELS["google/gemma-3-1b-it"], MODELS["google/gemma-3-4b-it"]
RUN = dict(episodes=16, batch_size=16, steps=20, prompt_tokens=8000, turn_tokens=2000,
           new_tokens=384)


def test_dtype_follows_native_bf16_and_sets_the_memory():
    t4 = estimate_run(GPUS["T4"], GEMMA_1B, **RUN)
    a100 = estimate_run(GPUS["A100-40GB"], GEMMA_1B, **RUN)
    assert (t4["dtype"], a100["dtype"]) == ("float32", "bfloat16")
    # fp32 weights and caches take twice the bytes of bf16 ones (the workspace is the same).
    assert t4["memory_gib"] - 1.5 == pytest.approx(2 * (a100["memory_gib"] - 1.5), abs=0.15)
    assert t4["fits"]  # the 1B model fits a T4 unquantised: no need for 4-bit
    assert not estimate_run(GPUS["T4"], GEMMA_4B, **RUN)["fits"]


def test_time_grows_with_steps_and_batches_and_shrinks_on_faster_gpus():
    base = estimate_run(GPUS["T4"], GEMMA_1B, **RUN)["seconds"]
    assert estimate_run(GPUS["T4"], GEMMA_1B, **{**RUN, "steps": 40})["seconds"] == \
        pytest.approx(2 * base, rel=0.01)
    assert estimate_run(GPUS["T4"], GEMMA_1B, **{**RUN, "episodes": 32})["seconds"] == \
        pytest.approx(2 * base, rel=0.01)
    assert estimate_run(GPUS["H100-80GB"], GEMMA_1B, **RUN)["seconds"] < base / 10


def test_gpu_names_and_bad_input():
    assert gpu_class("Tesla T4").name == "T4"
    assert gpu_class("NVIDIA A100-SXM4-40GB").name == "A100-40GB"
    assert gpu_class("NVIDIA GeForce RTX 4090") is None
    with pytest.raises(ValueError, match="batch_size"):
        estimate_run(GPUS["T4"], GEMMA_1B, **{**RUN, "batch_size": 0})

"""Notebook 07's GPU recipe on a GPU: LoRA SFT and GRPO on a Gemma-3-1B-architecture model.

No download (a device machine reaches nothing outside): the model is Gemma-3-1B's text
architecture (``gpu_gemma.GEMMA3_1B``) with random weights and the vocabulary of srelib's tiny
offline tokenizer in its tool format, saved to a folder and loaded back the way notebook 07 loads
``MODEL_ID``: ``from_pretrained(folder, dtype=resolve_dtype("auto"),
quantization_config=quantization_config(LOAD_IN_4BIT, dtype))``. For each of unquantised and
4-bit, it runs ``--sft-steps`` steps of ``sft_train`` with LoRA adapters on the scripted
policies' demonstrations, then ``--grpo-steps`` steps of ``grpo_train`` with LoRA, and reports
the losses, the logged reward, KL and parse-failure rate, the wall times and the peak GPU
memory as JSON, on stdout and in ``$OUT/gpu_train.json`` when ``OUT`` is set. Random weights
mean the rewards are not a result; the check is that the recipe runs, learns (the SFT loss
falls) and fits.

    python bench/gpu_train.py            # on a GPU machine
    python bench/gpu_train.py --tiny     # a tiny config on the CPU, to check the script
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_gemma import GEMMA3_1B, TINY, build_model, describe_run, emit  # noqa: E402


def four_bit_config(dtype):
    """Notebook 07's 4-bit config on CUDA; on a CPU (the ``--tiny`` check) bitsandbytes' CPU
    kernels with float32 compute, which ``quantization_config`` declines."""
    import torch
    from transformers import BitsAndBytesConfig

    from srelib.policies.hf_chat import quantization_config

    if torch.cuda.is_available():
        return quantization_config(True, dtype)
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                              bnb_4bit_compute_dtype=torch.float32)


def train(folder: str, tokenizer, rows: list[dict], four_bit: bool, args, scratch: Path) -> dict:
    """LoRA SFT then LoRA GRPO from the model in ``folder``; what each logged and cost."""
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM

    from srelib.policies.hf_chat import resolve_dtype
    from srelib.training.grpo import grpo_train
    from srelib.training.sft import sft_train

    def load():
        dtype = resolve_dtype("auto")
        return AutoModelForCausalLM.from_pretrained(
            folder, dtype=dtype, quantization_config=four_bit_config(dtype) if four_bit else None)

    def lora():
        return LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")

    result = {"four_bit": four_bit}
    for stage in ("sft", "grpo"):
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        started = time.perf_counter()
        if stage == "sft":
            trainer = sft_train(load(), tokenizer, rows, scratch / f"sft-{four_bit}",
                                epochs=1, max_steps=args.sft_steps, learning_rate=2e-4,
                                batch_size=4, max_length=2048, logging_steps=1,
                                disable_tqdm=True, peft_config=lora())
            losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
            result["sft"] = {"first_loss": losses[0], "last_loss": losses[-1]}
        else:
            trainer = grpo_train(load(), tokenizer, scratch / f"grpo-{four_bit}",
                                 steps=args.grpo_steps, num_generations=4,
                                 max_completion_length=256, max_turns=4, disable_tqdm=True,
                                 peft_config=lora())
            result["grpo"] = [{"step": h["step"], "reward": h["reward"], "kl": h["kl"],
                               "parse_failure_rate": h["rewards/parse_failure_rate/mean"]}
                              for h in trainer.state.log_history if "reward" in h]
        result[f"{stage}_s"] = round(time.perf_counter() - started, 1)
        if torch.cuda.is_available():
            result[f"{stage}_peak_gpu_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
        result[f"{stage}_trainable_params"] = trainable
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny config (CPU check)")
    parser.add_argument("--sft-steps", type=int, default=20)
    parser.add_argument("--grpo-steps", type=int, default=2)
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoTokenizer

    from srelib.policies.hf_chat import resolve_dtype
    from srelib.policies.prompts import TOOL_SYSTEM_PROMPT
    from srelib.tiny_model import tiny_chat_model
    from srelib.training.chat_format import use_tool_format
    from srelib.training.sft import demonstrations

    started = time.perf_counter()
    cuda = torch.cuda.is_available()
    with tempfile.TemporaryDirectory(prefix="srelib-gpu-train-") as scratch:
        scratch = Path(scratch)
        tokenizer = use_tool_format(AutoTokenizer.from_pretrained(
            tiny_chat_model(scratch / "tokenizer")))
        config = dict(TINY if args.tiny else GEMMA3_1B, vocab_size=len(tokenizer))
        model = build_model(config, tokenizer, "cuda" if cuda else "cpu", resolve_dtype("auto"))
        params = sum(p.numel() for p in model.parameters())
        folder = str(scratch / "model")
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        del model
        rows = demonstrations(seeds=range(2), tasks=["memory_leak", "cascading_failure"],
                              pools=["C"], prompt={"system": TOOL_SYSTEM_PROMPT,
                                                   "obs_chars": 1200, "max_history": 40,
                                                   "max_chars": 24000, "tool_turns": True})
        runs = [train(folder, tokenizer, rows, four_bit, args, scratch)
                for four_bit in (False, True)]
    return emit({**describe_run(args.tiny, params, resolve_dtype("auto")),
                 "demonstration_rows": len(rows), "runs": runs,
                 "total_s": round(time.perf_counter() - started, 1)}, "gpu_train.json")


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

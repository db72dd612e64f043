"""Notebook 07's GPU recipe on a GPU: LoRA SFT and GRPO on a Gemma-3-1B-architecture model.

No download (a device machine reaches nothing outside): the model is Gemma-3-1B's text
architecture (``gpu_gemma.GEMMA3_1B``) with random weights and the vocabulary of srelib's tiny
offline tokenizer in its tool format, saved to a folder and loaded back the way notebook 07 loads
``MODEL_ID`` (``srelib.training.lora.load_for_training``). For each of unquantised and 4-bit,
it runs ``--sft-steps`` steps of ``lora_warm_start`` (LoRA adapters on the scripted policies'
episodes), plays one short episode with the trained model (``lora_policy``), then runs
``--grpo-steps`` steps of ``grpo_train`` on the same adapters, and reports the losses, the
logged reward, KL and parse-failure rate, the wall times, the peak GPU memory, the
trainable parameters and the recipe's invariants (``recipe``: the tokenizer is in the tool
format, the base weights stay as loaded, only LoRA adapters train, GRPO trains the adapters SFT
trained and keeps a frozen ``ref`` copy of them) as JSON, on stdout and in ``$OUT/gpu_train.json`` when ``OUT`` is set.
Random weights mean the rewards are not a result; the check is that the recipe runs, learns
(the SFT loss falls) and fits.

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


def four_bit_config():
    """Notebook 07's 4-bit config on CUDA; on a CPU (the ``--tiny`` check) bitsandbytes' CPU
    kernels with float32 compute, which ``quantization_config`` declines."""
    import torch
    from transformers import BitsAndBytesConfig

    from srelib.policies.llm.providers.hf_chat import quantization_config, resolve_dtype

    if torch.cuda.is_available():
        return quantization_config(True, resolve_dtype("auto"))
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                              bnb_4bit_compute_dtype=torch.float32)


def train(folder: str, four_bit: bool, args, scratch: Path) -> dict:
    """Notebook 07's GPU recipe from the model in ``folder``: LoRA SFT (``lora_warm_start``),
    one episode played by the trained model (``lora_policy``), then GRPO on the same adapters;
    what each logged and cost."""
    import torch

    from srelib.runners.rollout import evaluate
    from srelib.training.grpo import grpo_train
    from srelib.training.lora import load_for_training, lora_policy, lora_warm_start

    def measured(stage, work):
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        started = time.perf_counter()
        trainer = work()
        result[f"{stage}_s"] = round(time.perf_counter() - started, 1)
        if torch.cuda.is_available():
            result[f"{stage}_peak_gpu_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        return trainer

    result = {"four_bit": four_bit}
    quantization = four_bit_config() if four_bit else None
    model, tokenizer = load_for_training(folder, quantization=quantization)
    base = snapshot(model.named_parameters())
    sft = measured("sft", lambda: lora_warm_start(
        model, tokenizer, scratch / f"sft-{four_bit}", seeds=range(1), pools=["C"],
        max_steps=args.sft_steps, batch_size=2, gradient_accumulation_steps=1,
        max_length=args.sft_max_length,
        learning_rate=1e-3, logging_steps=1, disable_tqdm=True))
    losses = [h["loss"] for h in sft.state.log_history if "loss" in h]
    result["sft"] = {"first_loss": losses[0], "last_loss": losses[-1],
                     "trainable_params": trainable(sft.model)}
    after = snapshot((n.replace(".base_layer", ""), p)
                     for n, p in sft.model.get_base_model().named_parameters() if "lora_" not in n)
    trained = {n for n, p in sft.model.named_parameters() if p.requires_grad}
    adapters = snapshot((n, p) for n, p in sft.model.named_parameters() if "lora_" in n)
    player = lora_policy(sft.model, tokenizer, "lora")
    player.max_new_tokens = args.play_tokens or player.max_new_tokens
    played = measured("play", lambda: evaluate(
        {"lora": player}, tasks=["memory_leak"], pools=["C"], seeds=[1000], max_steps=3,
        progress=False))
    result["play"] = {"steps": int(played["p1_steps"].sum() + played["p2_steps"].sum()),
                      "ended_by": played["ended_by"].iloc[0], "policy": repr(player),
                      "max_new_tokens": player.max_new_tokens}
    print(f"gpu_train: four_bit={four_bit} sft {result['sft_s']} s, play {result['play_s']} s",
          flush=True)
    grpo = measured("grpo", lambda: grpo_train(
        sft.model, tokenizer, scratch / f"grpo-{four_bit}", steps=args.grpo_steps,
        num_generations=4, max_completion_length=args.grpo_completion, max_turns=4,
        disable_tqdm=True))
    result["grpo"] = [{"step": h["step"], "reward": h["reward"], "kl": h["kl"],
                       "parse_failure_rate": h["rewards/parse_failure_rate/mean"]}
                      for h in grpo.state.log_history if "reward" in h]
    result["grpo_trainable_params"] = trainable(grpo.model)
    now = dict(grpo.model.named_parameters())
    result["grpo_moved_the_adapters"] = any(not torch.equal(now[n], p) for n, p in adapters.items())
    result["recipe"] = {
        "tokenizer_reads_tool_calls": bool(tokenizer.response_template),
        "base_weights_unchanged_by_sft": after.keys() == base.keys() and all(
            torch.equal(after[n], p) for n, p in base.items()),
        "only_lora_adapters_train": bool(trained) and all("lora_" in n for n in trained),
        "grpo_adapters": sorted(grpo.model.peft_config),
        "grpo_trains_the_sft_adapters": {n for n, p in now.items() if p.requires_grad} == trained,
        "ref_is_a_frozen_copy_of_the_sft_adapters": all(
            torch.equal(now[n.replace(".default.", ".ref.")], p) for n, p in adapters.items()),
    }
    return result


def snapshot(named) -> dict:
    """A detached copy of each named parameter, to compare with after training."""
    return {name: p.detach().clone() for name, p in named}


def add_budget_options(parser) -> None:
    """The options that bound the episode played and GRPO's completions."""
    parser.add_argument("--play-tokens", type=int, default=None,
                        help="new tokens per reply in the episode played (default: the recipe's)")
    parser.add_argument("--grpo-completion", type=int, default=1024,
                        help="GRPO's max_completion_length (tokens of a rollout)")
    parser.add_argument("--sft-max-length", type=int, default=8192,
                        help="tokens of an SFT conversation (its start is cut beyond)")


def save_model(folder: Path, tiny: bool) -> str:
    """The Gemma-3-1B architecture (or the tiny config) with random weights and the tiny
    tokenizer in its tool format, saved in ``folder`` (built once, then reused)."""
    import torch
    from transformers import AutoTokenizer

    from srelib.policies.llm.providers.hf_chat import resolve_dtype
    from srelib.training.tiny_model import tiny_chat_model
    from srelib.training.chat_format import use_tool_format

    if not (folder / "config.json").exists():
        tokenizer = use_tool_format(AutoTokenizer.from_pretrained(
            tiny_chat_model(Path(tempfile.gettempdir()) / "srelib-bench-tiny-model")))
        config = dict(TINY if tiny else GEMMA3_1B, vocab_size=len(tokenizer))
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = build_model(config, tokenizer, device, resolve_dtype("auto"))
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    return str(folder)


def saved_params(folder: str) -> int:
    """How many parameters the model saved in ``folder`` has."""
    import math

    from safetensors import safe_open

    with safe_open(str(Path(folder) / "model.safetensors"), "pt") as weights:
        return sum(math.prod(weights.get_slice(k).get_shape()) for k in weights.keys())


def trainable(model) -> int:
    """How many of ``model``'s parameters train."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny config (CPU check)")
    parser.add_argument("--sft-steps", type=int, default=20)
    parser.add_argument("--grpo-steps", type=int, default=2)
    add_budget_options(parser)
    args = parser.parse_args(argv)

    from srelib.policies.llm.providers.hf_chat import resolve_dtype

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="srelib-gpu-train-") as scratch:
        scratch = Path(scratch)
        folder = save_model(scratch / "model", args.tiny)
        runs = [train(folder, four_bit, args, scratch) for four_bit in (False, True)]
        params = saved_params(folder)
    return emit({**describe_run(args.tiny, params, resolve_dtype("auto")), "runs": runs,
                 "total_s": round(time.perf_counter() - started, 1)}, "gpu_train.json")


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

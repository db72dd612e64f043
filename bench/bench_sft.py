"""SFT on the agent's conversations: the loss over every position vs the labelled ones only.

Builds the small agent's demonstrations, tokenizer and model as ``srelib agent train`` does,
then times ``--steps`` SFT steps (TRL's ``train_runtime``, setup excluded) two ways, alternating
``--repeats`` times: with TRL's fused loss projecting every position through the LM head (what
TRL does on a CPU) and with :func:`srelib.training.labelled_positions.labelled_positions_only`
(TRL's compact path, what ``sft_train`` uses). Reports both medians, their ratio, and whether
the logged losses agree.

    python bench/bench_sft.py --steps 30 --repeats 3
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row, base_parser, median, report  # noqa: E402

MODES = ("every position", "labelled positions only")


def train_steps(rows, tokenizer, tools, steps: int, mode: str) -> tuple[float, list[float]]:
    """Seconds of ``steps`` SFT steps of a fresh agent model in ``mode``, and its losses."""
    from unittest import mock

    from srelib.training import agent, labelled_positions
    from srelib.training.sft import sft_train

    model = agent.agent_model(tokenizer, context=2048)
    every = mock.patch.object(labelled_positions, "labelled_positions_only",
                              contextlib.nullcontext)
    with tempfile.TemporaryDirectory(prefix="srelib-bench-sft-") as scratch, \
            (every if mode == MODES[0] else contextlib.nullcontext()):
        trainer = sft_train(model, tokenizer, rows, scratch, epochs=3, learning_rate=5e-3,
                            batch_size=4, max_length=2048, tools=tools, conversations=True,
                            max_completion=agent.TOOL_AGENT_PROMPT["max_new_tokens"],
                            max_steps=steps, logging_steps=10, disable_tqdm=True,
                            train_sampling_strategy="group_by_length")
    history = trainer.state.log_history
    return history[-1]["train_runtime"], [h["loss"] for h in history if "loss" in h]


def run(steps: int, repeats: int) -> list[Row]:
    from srelib.policies.llm.tools import tool_definitions
    from srelib.training import agent

    rows = agent.agent_rows(settings=agent.TOOL_AGENT_PROMPT)
    tools = tool_definitions()
    tokenizer = agent.agent_tokenizer(rows, tools=tools)
    seconds = {mode: [] for mode in MODES}
    losses = {}
    for _ in range(repeats):
        for mode in MODES:
            took, losses[mode] = train_steps(rows, tokenizer, tools, steps, mode)
            seconds[mode].append(took)
    every, labelled = (median(seconds[mode]) for mode in MODES)
    gap = max(abs(a - b) for a, b in zip(*losses.values(), strict=True))
    return [
        Row("sft", f"{steps} steps, {MODES[0]} (median)", every, "s", note=f"{repeats} runs"),
        Row("sft", f"{steps} steps, {MODES[1]} (median)", labelled, "s", note=f"{repeats} runs"),
        Row("sft", "speed-up", every / labelled, "x"),
        Row("sft", "largest gap between the logged losses", gap, "", "< 0.001", gap < 1e-3),
    ]


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="SFT steps per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each mode, alternating")
    args = parser.parse_args(argv)
    rows = run(args.steps, args.repeats)
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()

"""A tiny, offline, Gemma-architecture chat model, for CPU runs of the notebooks and the tests.

``tiny_chat_model(path)`` builds a causal LM of about 100k parameters and a BPE tokenizer
trained on a small built-in corpus, with a Gemma-style chat template (which, like Gemma's,
rejects a system role). A short training run makes it answer a chat turn with JSON-like action
text, some of it valid and some broken, so episodes driven by it exercise the parser's good and
bad paths. Building takes seconds and the saved folder is under 1 MB. Tests and the CI runs of
the notebooks use it; it needs nothing from the network.

``serve_tiny_model(path)`` puts that model behind a real OpenAI-compatible endpoint:
``transformers serve`` on a free 127.0.0.1 port, stopped when the ``with`` block ends.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple

from srelib.extras import require

#: Gemma's turn markers; the template below formats turns the way Gemma's does.
START_OF_TURN = "<start_of_turn>"
END_OF_TURN = "<end_of_turn>"
SPECIAL_TOKENS = ("<pad>", "<eos>", "<bos>", "<unk>", START_OF_TURN, END_OF_TURN)

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}"
    "{% endif %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{ '" + START_OF_TURN + "' + role + '\\n' + (message['content'] | trim) + '"
    + END_OF_TURN + "\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '" + START_OF_TURN + "model\\n' }}{% endif %}"
)

_REPLIES = (
    {"action_type": "view_alerts", "target_service": None, "parameters": {}},
    {"action_type": "check_metrics", "target_service": "orders", "parameters": {}},
    {"action_type": "query_logs", "target_service": "auth", "parameters": {"limit": 15}},
    {"action_type": "list_dir", "target_service": None, "parameters": {"path": "."}},
    {"action_type": "get_git_log", "target_service": None, "parameters": {"n_commits": 5}},
)

_PROSE = (
    "Incident: orders is degraded and api_gateway returns errors after a deploy.",
    "Observation: memory grows, error rate rises, p99 latency exceeds the threshold.",
    "Valid actions: view_alerts, query_logs:orders, check_metrics:payment, rollback_deploy:queue.",
    "Phase 2: read_file, search_code, list_dir, get_git_log, get_file_diff, propose_patch.",
    "Reply with one JSON object with action_type, target_service and parameters.",
    "The belief has suspected_service, suspected_fault_class, service_confidence and reasoning.",
)


def _corpus() -> list[str]:
    """Text the tokenizer is trained on: prose about incidents plus JSON action replies."""
    replies = [json.dumps(r) for r in _REPLIES]
    return list(_PROSE) * 4 + replies * 8


def chat_tokenizer(texts: Iterable[str], vocab_size: int, pre_tokenizer=None):
    """A byte-level BPE tokenizer trained on ``texts``, with Gemma's special tokens, turn
    markers and this module's chat template (``pre_tokenizer`` defaults to byte-level words)."""
    require("tokenizers", "srelib.training.tiny_model")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    require("transformers", "srelib.training.tiny_model")
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizer or pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>",
        additional_special_tokens=[START_OF_TURN, END_OF_TURN],
        chat_template=CHAT_TEMPLATE,
        padding_side="left",
    )


def _build_model(tokenizer, train_steps: int):
    require("torch", "srelib.training.tiny_model")
    import torch
    require("transformers", "srelib.training.tiny_model")
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=32,
        max_position_embeddings=4096, sliding_window=512,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=[tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids(END_OF_TURN)],
        tie_word_embeddings=True,
    )
    model = Gemma3ForCausalLM(config)
    _teach_replies(model, tokenizer, train_steps)
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.do_sample = False
    return model.eval()


def _teach_replies(model, tokenizer, steps: int) -> None:
    """A few optimiser steps on the model turns only, so that a JSON action follows a prompt."""
    require("torch", "srelib.training.tiny_model")
    import torch

    rows, targets = [], []
    for prose, reply in zip(_PROSE, _REPLIES):
        prompt = tokenizer.apply_chat_template(
            [{"role": "user", "content": prose}], add_generation_prompt=True,
            return_dict=True)["input_ids"]
        answer = tokenizer.encode(json.dumps(reply) + END_OF_TURN, add_special_tokens=False)
        rows.append(prompt + answer)
        targets.append([-100] * len(prompt) + answer)
    width = max(map(len, rows))
    pad = tokenizer.pad_token_id
    input_ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    labels = torch.tensor([t + [-100] * (width - len(t)) for t in targets])
    attention_mask = (labels != -100) | (torch.arange(width) < torch.tensor(
        [len(r) for r in rows])[:, None])
    optimiser = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    for _ in range(steps):
        loss = model(input_ids=input_ids, attention_mask=attention_mask.long(), labels=labels).loss
        loss.backward()
        optimiser.step()
        optimiser.zero_grad()


#: Chat-policy settings that keep the tiny model's prompts inside its 4096 positions (its
#: byte-level tokenizer spends about one token per two characters of observation text).
TINY_PROMPT_LIMITS = {"max_history": 1, "obs_chars": 1000}


def default_model_dir() -> Path:
    """Where :func:`tiny_chat_model` builds by default, reused: one folder per version of this
    module and machine class (CPU kernel level, torch, transformers), since its few training
    steps give other weights on another processor, and a folder built by other code must not
    be taken."""
    import hashlib

    from srelib.results.provenance import digest, machine_class

    source = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    key = digest({"source": source, **machine_class()})
    return Path(tempfile.gettempdir()) / f"srelib-tiny-chat-model-{key}"


#: The default recipe: optimiser steps that teach the replies, and the tokenizer's vocabulary.
TRAIN_STEPS, VOCAB_SIZE = 150, 600


def tiny_chat_model(path: str | os.PathLike | None = None, *, train_steps: int = TRAIN_STEPS,
                    vocab_size: int = VOCAB_SIZE) -> str:
    """Build (once per path) a tiny Gemma3 chat model and tokenizer under ``path``; return it.

    The folder loads with ``AutoModelForCausalLM`` / ``AutoTokenizer`` and serves with
    ``transformers serve``. A folder that already holds a built model is reused as is;
    ``path=None`` means :func:`default_model_dir`, built once per machine class and copied to
    any other ``path`` asked for with the default recipe.
    """
    target = Path(path) if path is not None else default_model_dir()
    if _is_built(target):
        return str(target)
    from srelib.results.saving import save_folder

    if path is not None and (train_steps, vocab_size) == (TRAIN_STEPS, VOCAB_SIZE):
        built = tiny_chat_model()
        return str(save_folder(target, lambda folder: shutil.copytree(built, folder,
                                                                      dirs_exist_ok=True)))
    with _build_lock(target):
        if _is_built(target):  # another process built it while this one waited
            return str(target)
        tokenizer = chat_tokenizer(_corpus(), vocab_size)
        model = _build_model(tokenizer, train_steps)

        def write(folder: Path) -> None:
            tokenizer.save_pretrained(folder)
            _save_quietly(model, folder)

        return str(save_folder(target, write))


def _is_built(folder: Path) -> bool:
    return (folder / "config.json").is_file() and (folder / "tokenizer.json").is_file()


@contextmanager
def _build_lock(target: Path) -> Iterator[None]:
    """One build at a time per folder, across processes (test workers share the default)."""
    import fcntl

    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(f".{target.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _save_quietly(model, target: Path) -> None:
    """``save_pretrained`` without its progress bar, which would make notebook outputs vary."""
    require("transformers", "srelib.training.tiny_model")
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(target)
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


class Served(NamedTuple):
    """A running ``transformers serve``: its OpenAI base URL and the model name to request."""

    base_url: str
    model: str
    log: Path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _serve_command() -> str:
    beside = Path(sys.executable).with_name("transformers")
    found = str(beside) if beside.exists() else shutil.which("transformers")
    if not found:
        raise RuntimeError("the `transformers` command is not installed: pip install transformers")
    return found


@contextmanager
def serve_tiny_model(path: str | os.PathLike | None = None, *, host: str = "127.0.0.1",
                     start_timeout: float = 120.0,
                     serve_args: tuple[str, ...] = ()) -> Iterator[Served]:
    """Build the tiny model under ``path`` if needed and serve it offline on a free port
    (``serve_args``: more ``transformers serve`` options, e.g. ``("--continuous-batching",)``)."""
    model = tiny_chat_model(path)
    port = free_port(host)
    log = Path(tempfile.mkdtemp(prefix="srelib-serve-")) / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    with open(log, "w") as out:
        proc = subprocess.Popen([_serve_command(), "serve", model, "--host", host,
                                 "--port", str(port), "--device", "cpu", *serve_args],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_for_port(proc, host, port, start_timeout, log)
        yield Served(f"http://{host}:{port}/v1", model, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for_port(proc: subprocess.Popen, host: str, port: int, timeout: float,
                   log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"transformers serve exited:\n{log.read_text()[-3000:]}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"transformers serve did not start in {timeout:.0f} s:\n"
                       f"{log.read_text()[-3000:]}")

"""HFTransformersChatPolicy: a local Hugging Face chat model (Gemma on Colab or Runpod).

Prompts go through the tokenizer's own ``apply_chat_template``; a template that rejects the
system role (Gemma's does) gets the system prompt folded into the first user turn. Weights load
in bf16 only on a GPU with native bf16 (compute capability 8.0 or newer), else in fp32, and
never in fp16 (Gemma overflows in it); the 4-bit compute dtype follows the same rule. 4-bit
loading goes through ``BitsAndBytesConfig`` (nf4, double quantisation) and only when CUDA is
available; otherwise a message says so and the model loads unquantised.

``act_batch`` generates for many episodes at once. With kept caches every lane keeps its
keys/values between turns and prefills only what its transcript appended; the system-prompt
prefix is encoded once for all lanes; lanes are bucketed by how much they must prefill (see
:mod:`srelib.policies.llm.kv_cache`). ``kv_cache="auto"`` (the default) keeps them on a CPU, where
prefill dominates, and re-encodes every prompt on CUDA, where a prefill costs milliseconds and
re-encoding measured faster (``bench/gpu_gemma.py``); ``True``/``False`` force either. A reply
ends once its action is complete (:mod:`srelib.policies.llm.reply_end`), or at ``max_new_tokens``.
``static_cache=True`` re-encodes into transformers' static cache instead, sized in steps of
:data:`STATIC_CACHE_STEP` tokens so that calls share shapes: on CUDA ``generate`` then compiles
its decoding step (one compilation per batch size and cache size), which pays only over many
calls of the same shapes.
Greedy decoding (``temperature=0``) gives the same replies batched or one at a time, cached or
not.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srelib.extras import require
from srelib.policies.llm import kv_cache
from srelib.policies.llm.chat import ChatPolicyBase
from srelib.policies.llm.config import ChatConfig
from srelib.policies.llm.providers import provider
from srelib.policies.llm.kv_cache import PrefixCache, Row
from srelib.policies.llm.reply_end import ObjectTables, action_end
from srelib.policies.llm.prompts import SYSTEM_PROMPT, fold_system
from srelib.policies.llm.saved import saved_settings

log = logging.getLogger(__name__)

_DTYPES = ("auto", "bfloat16", "float32")
#: Static caches are sized up to a multiple of this many tokens.
STATIC_CACHE_STEP = 1024
#: Prompt settings for a model saved without its own (see srelib.policies.llm.saved).
_PROMPT_DEFAULTS = {"system_prompt": SYSTEM_PROMPT, "obs_chars": 6000, "max_history": 6,
                    "max_prompt_chars": 24000, "max_tokens": 512, "tools": False}


@dataclass(kw_only=True)
class HFChatConfig(ChatConfig):
    """:class:`~srelib.policies.llm.config.ChatConfig` plus how a local model loads and decodes.
    The ChatConfig fields come first; these follow.

    Args:
        device_map: transformers' ``device_map`` on CUDA (None: load on the default device).
        load_in_4bit: Load 4-bit (nf4) through bitsandbytes, when CUDA is there.
        torch_dtype: ``"auto"`` (bf16 where the GPU has it natively, else fp32), ``"bfloat16"``
            or ``"float32"``; never fp16.
        top_p: Nucleus sampling's mass, when ``temperature > 0``.
        max_batch_size: Conversations per ``generate`` call.
        kv_cache: Keep each lane's keys/values between turns: ``"auto"`` (yes except on
            CUDA), True or False.
        static_cache: Re-encode into transformers' static cache (compiled decoding on CUDA).
        stop_at_action: End a reply once its action is complete.

    Raises:
        ValueError: ``static_cache`` with ``kv_cache=True``, or ``max_batch_size`` below 1.
    """

    device_map: str | None = "auto"
    load_in_4bit: bool = True
    torch_dtype: Any = "auto"
    top_p: float = 0.95
    max_batch_size: int = 16
    kv_cache: bool | str = "auto"
    static_cache: bool = False
    stop_at_action: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.static_cache and self.kv_cache is True:
            raise ValueError("static_cache re-encodes every prompt; use kv_cache=False or 'auto'")


def native_bf16() -> bool:
    """Whether the CUDA device computes bf16 natively (compute capability 8.0 or newer).

    ``torch.cuda.is_bf16_supported()`` also counts emulation, which makes a T4 (7.5) run slow
    emulated bf16, so the capability is checked instead.
    """
    require("torch", "srelib.policies.llm.providers.hf_chat")
    import torch

    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8


def resolve_dtype(torch_dtype: Any = "auto"):
    """The torch dtype to load and compute with: ``auto`` means bf16 where the GPU has it
    natively, else fp32. ``bfloat16`` on a CUDA device without native bf16 is refused."""
    require("torch", "srelib.policies.llm.providers.hf_chat")
    import torch

    name = str(torch_dtype).replace("torch.", "")
    if name in ("float16", "half", "fp16"):
        raise ValueError("fp16 is not supported (Gemma overflows in fp16); "
                         f"choose one of {list(_DTYPES)}")
    if name not in _DTYPES:
        raise ValueError(f"unknown torch_dtype {torch_dtype!r}; choose one of {list(_DTYPES)}")
    if name == "auto":
        return torch.bfloat16 if native_bf16() else torch.float32
    if name == "bfloat16" and torch.cuda.is_available() and not native_bf16():
        major, minor = torch.cuda.get_device_capability()
        raise ValueError(f"this GPU (compute capability {major}.{minor}) has no native bf16 and "
                         "would emulate it slowly; choose 'auto' or 'float32'")
    return getattr(torch, name)


def resolve_kv_cache(setting: bool | str, device) -> bool:
    """Whether to keep KV caches between turns: ``"auto"`` keeps them except on CUDA."""
    if setting == "auto":
        return getattr(device, "type", str(device)) != "cuda"
    if isinstance(setting, bool):
        return setting
    raise ValueError(f"unknown kv_cache {setting!r}; choose one of ['auto', True, False]")


def quantization_config(load_in_4bit: bool, compute_dtype):
    """The 4-bit config when asked for and CUDA is there; None (with a message) otherwise."""
    require("torch", "srelib.policies.llm.providers.hf_chat")
    import torch

    if not load_in_4bit:
        return None
    if not torch.cuda.is_available():
        print("srelib: 4-bit loading needs CUDA (bitsandbytes); no CUDA device found, so the "
              f"model loads unquantised in {str(compute_dtype).replace('torch.', '')}.")
        return None
    require("transformers", "srelib.policies.llm.providers.hf_chat")
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                              bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=compute_dtype)


def model_access_problem(model_id: str, *, token: str | None = None,
                         endpoint: str | None = None) -> str | None:
    """None if ``model_id`` (a local folder or a hub id) can be loaded; else what to do.

    Asks the hub's auth check before any download, so a gated model (Gemma) whose licence was
    not accepted, or a missing token, stops with one message instead of a long traceback
    after minutes of setup. ``endpoint`` defaults to the hub (``HF_ENDPOINT``).
    """
    if Path(model_id).is_dir():
        return None
    require("huggingface_hub", "srelib.policies.llm.providers.hf_chat")
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    token = token or get_token()
    page = f"https://huggingface.co/{model_id}"
    login = ("log in with huggingface_hub.login(), or on Colab add an HF_TOKEN secret "
             "(key icon in the left bar) and allow this notebook to read it")
    try:
        HfApi(endpoint=endpoint).auth_check(model_id, token=token or False)
    except GatedRepoError:
        return (f"{model_id} is gated and this Hugging Face account has not been granted it: "
                f"open {page}, accept the licence (granted within minutes), then run again.")
    except RepositoryNotFoundError:
        if token is None:
            return (f"No Hugging Face token found, and {model_id} needs one (it is gated, "
                    f"private or missing): accept its licence at {page}, create a read token "
                    f"at https://huggingface.co/settings/tokens, then {login}.")
        return (f"{model_id} was not found, or this token may not read it: check the id at "
                f"{page} and that the token has read access.")
    except HfHubHTTPError as error:
        status = getattr(error.response, "status_code", "?")
        if status == 401:
            return (f"The hub rejected this Hugging Face token (invalid or expired): create a "
                    f"new read token at https://huggingface.co/settings/tokens, then {login}.")
        return f"The hub refused the access check for {model_id} (HTTP {status}): {error}"
    except Exception as error:  # noqa: BLE001 - offline, DNS, proxy: all mean no download
        return (f"Could not reach the Hugging Face hub to check {model_id} "
                f"({type(error).__name__}: {error}); check the connection, or point the model "
                "id at a local folder.")
    return None


@provider("hf")
class HFTransformersChatPolicy(ChatPolicyBase):
    """Chat policy over a local causal LM: a hub id or folder, or a preloaded model+tokenizer.

    Takes an :class:`HFChatConfig` (or a plain ``ChatConfig``) and/or its fields as keywords;
    the model may come first by position. ``model_id_or_path`` and ``model_id`` are old names
    of ``model``, ``max_new_tokens`` of ``max_tokens``. ``model=`` may also be a loaded model
    (anything but a string or a path), given with its ``tokenizer=``.
    ``reset(seed=...)`` seeds sampling; with ``temperature=0`` decoding is greedy.
    ``tools=True`` renders the actions as tools through the chat template, when the template
    can render them (else a warning, and actions are read from the reply text), reads a
    tool call from the reply with the tokenizer's ``response_template``, and keeps the
    conversation in tool turns (:class:`~srelib.policies.llm.prompts.Transcript`), as TRL's GRPO
    rollouts do. A folder saved with prompt settings (:mod:`srelib.policies.llm.saved`, e.g. by
    ``srelib agent train``) supplies the defaults of ``system_prompt``, ``obs_chars``,
    ``max_history``, ``max_prompt_chars``, ``max_tokens`` and ``tools``.

    Args:
        config: An :class:`HFChatConfig` or a ``ChatConfig``, or the model (a hub id or folder).
        tokenizer: The tokenizer of a loaded model (default: the model's own, loaded).
        **overrides: Config fields by name, over ``config``; ``model`` may be a loaded model.

    Raises:
        TypeError: An unknown keyword (the message lists the valid ones).
        ValueError: No model, a tokenizer without a chat template, or a setting out of range.
    """

    config_class = HFChatConfig
    defaults = {**ChatPolicyBase.defaults, **_PROMPT_DEFAULTS}

    def __init__(self, config: ChatConfig | str | os.PathLike | None = None, /, *,
                 tokenizer: Any = None, **overrides: Any):
        loaded = overrides.pop("model") if _is_loaded(overrides.get("model")) else None
        super().__init__(config, **overrides)
        c = self.config
        if _is_loaded(c.model):
            raise TypeError("a config's model is a hub id or a folder; pass a loaded model as "
                            "model= to the policy, with tokenizer=")
        source = c.model
        if source is None and (loaded is None or tokenizer is None):
            raise ValueError("give model_id_or_path, or both model= and tokenizer=")
        self.max_new_tokens, self.temperature = int(c.max_tokens), float(c.temperature)
        self.top_p, self.max_batch_size = float(c.top_p), max(1, int(c.max_batch_size))
        self.dtype = resolve_dtype(c.torch_dtype)
        if tokenizer is None:
            require("transformers", "srelib.policies.llm.providers.hf_chat")
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(source)
        model = loaded if loaded is not None else self._load(source, c.device_map, c.load_in_4bit)
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("the tokenizer has no chat template; use an instruction-tuned "
                             "(chat) model or set tokenizer.chat_template")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer, self.model = tokenizer, model.eval()
        self.model_id = source or getattr(model.config, "name_or_path", "model")
        self.name = c.name or f"hf:{self.model_id}"
        self.folds_system: bool | None = None  # learnt from the template on first use
        self.kv_cache_setting, self.static_cache = c.kv_cache, bool(c.static_cache)
        self.kv_cache = resolve_kv_cache(c.kv_cache, self._device()) and not self.static_cache
        self.stop_at_action = bool(c.stop_at_action)
        self._object_tables: ObjectTables | None = None
        self._prefixes = PrefixCache()
        self._calls = 0
        self.tools = bool(c.tools) and self._template_renders_tools()

    def _saved_settings(self, config: ChatConfig) -> dict[str, Any]:
        """The prompt settings saved in the model's folder (``max_new_tokens`` there sets
        ``max_tokens``)."""
        if _is_loaded(config.model):
            return {}
        saved = saved_settings(config.model)
        if "max_new_tokens" in saved:
            saved["max_tokens"] = saved.pop("max_new_tokens")
        return saved

    @property
    def tool_turns(self) -> bool:
        """Tools on means a conversation in tool turns, as in GRPO's rollouts."""
        return self.tools

    def __repr__(self) -> str:
        return (f"HFTransformersChatPolicy({self.model_id!r}, temperature={self.temperature}, "
                f"kv_cache={self.kv_cache} ({self.kv_cache_setting!r}))")

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        super().reset(seed, task_name)
        self._calls = 0  # sampling seeds restart with the episode
        self._prefixes.entries = []  # the shared system-prompt prefix stays

    def _load(self, source: str, device_map: str | None, load_in_4bit: bool):
        require("torch", "srelib.policies.llm.providers.hf_chat")
        import torch
        require("transformers", "srelib.policies.llm.providers.hf_chat")
        from transformers import AutoModelForCausalLM

        kwargs: dict[str, Any] = {"dtype": self.dtype}
        quant = quantization_config(load_in_4bit, self.dtype)
        if quant is not None:
            kwargs["quantization_config"] = quant
        if torch.cuda.is_available() and device_map is not None:
            kwargs["device_map"] = device_map
        return AutoModelForCausalLM.from_pretrained(source, **kwargs)

    def _template_renders_tools(self) -> bool:
        from srelib.policies.llm.tools import tool_definitions

        probe = tool_definitions()[:1]
        try:
            text = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": "-"}], tools=probe, tokenize=False,
                add_generation_prompt=True)
        except Exception:  # noqa: BLE001 - jinja raises its own TemplateError
            text = ""
        if probe[0]["function"]["name"] in text:
            return True
        log.warning("%s's chat template cannot render tools; reading actions from the reply "
                    "text instead", self.model_id)
        return False

    def _template(self, messages: list[dict]) -> str:
        from srelib.policies.llm.tools import tool_definitions

        return self.tokenizer.apply_chat_template(
            messages, tools=tool_definitions() if self.tools else None, tokenize=False,
            add_generation_prompt=True)

    def chat_prompt(self, messages: list[dict]) -> str:
        """The prompt text from the chat template, folding the system turn in when rejected."""
        if self.folds_system is not True:
            try:
                text = self._template(messages)
                if messages and messages[0]["role"] == "system":
                    self.folds_system = False
                return text
            except Exception:  # noqa: BLE001 - jinja raises its own TemplateError
                if not messages or messages[0]["role"] != "system" or self.folds_system is False:
                    raise
                self.folds_system = True
        return self._template(fold_system(messages))

    def fitted_prompt(self, messages: list[dict]) -> str:
        """The prompt of ``messages`` within the model's context (its positions less
        ``max_new_tokens``): while it is longer, the oldest exchange after the system turn and
        the opening observation goes."""
        limit = getattr(self.model.config, "max_position_embeddings", None)
        prompt = self.chat_prompt(messages)
        if not limit:
            return prompt
        while len(messages) > 3 and len(self.tokenizer(
                prompt, add_special_tokens=False)["input_ids"]) > limit - self.max_new_tokens:
            messages = messages[:2] + messages[4:]
            prompt = self.chat_prompt(messages)
        return prompt

    def _complete(self, conversations: list[list[dict]]) -> list[str | BaseException]:
        prompts = [self.fitted_prompt(m) for m in conversations]
        replies = self.generate(prompts)
        if not self.tools:
            return replies
        return [self.read_tool_call(p, r) for p, r in zip(prompts, replies)]

    def read_tool_call(self, prompt: str, reply: str) -> str | BaseException:
        """The reply's first tool call as action JSON, if the tokenizer's ``response_template``
        finds one; else the reply itself, for the text parser."""
        from srelib.policies.llm.tools import tool_call_text

        if getattr(self.tokenizer, "response_template", None) is None:
            return reply
        try:
            calls = self.tokenizer.parse_response(reply, prefix=prompt).get("tool_calls")
        except Exception:  # noqa: BLE001 - a malformed call is read as text (a parse failure)
            return reply
        if not calls:
            return reply
        try:
            return tool_call_text(calls[0])
        except ValueError as error:
            return error

    def generate(self, prompts: list[str]) -> list[str]:
        """One reply per prompt, in left-padded batches of at most ``max_batch_size``.

        With ``kv_cache`` each prompt reuses the keys/values of the longest kept token prefix
        (its lane's previous turn, or the shared system-prompt prefix) and the call's
        sequences are kept for the next one; without it every prompt is encoded in full.
        Each usage record has ``prefill_tokens`` (encoded now) and ``cached_tokens`` (reused).
        """
        require("torch", "srelib.policies.llm.providers.hf_chat")
        import torch

        encoded = [torch.tensor(self.tokenizer(p, add_special_tokens=False)["input_ids"],
                                dtype=torch.long) for p in prompts]
        if self.kv_cache:
            self._encode_shared_prefix()
        rows = []
        for item, ids in enumerate(encoded):
            source, shared = self._prefixes.best(ids) if self.kv_cache else (None, 0)
            rows.append(Row(item, ids, source, min(shared, len(ids) - 1)))
        self._prefixes.entries = []  # the rows hold what they reuse; the rest can be freed
        texts: list[str] = [""] * len(prompts)
        records: list[tuple[int, dict]] = []
        kept: list[kv_cache.CachedSequence] = []
        for bucket in kv_cache.buckets(rows, self.max_batch_size):
            self._generate_bucket(bucket, texts, records, kept)
        if self.kv_cache:
            self._prefixes.entries = kept
        for _, record in sorted(records, key=lambda r: r[0]):
            self._record(**record)
        return texts

    def _generate_bucket(self, bucket: list[Row], texts: list[str], records: list,
                         kept: list) -> None:
        """One ``generate`` call for ``bucket``: replies into ``texts``, usage into
        ``records``, the rows' sequences (with their caches) into ``kept``."""
        require("torch", "srelib.policies.llm.providers.hf_chat")
        import torch

        weight = self.model.get_input_embeddings().weight
        past, width, pasts = kv_cache.plan_rows(bucket)
        pad = self.tokenizer.pad_token_id
        total = past + width
        input_ids = torch.full((len(bucket), total), pad, dtype=torch.long)
        mask = torch.zeros((len(bucket), total), dtype=torch.long)
        for r, row in enumerate(bucket):
            length = row.ids.shape[0]
            input_ids[r, total - length:] = row.ids
            mask[r, total - length:] = 1
        options = self._generation_options()
        capacity = total + self.max_new_tokens
        if self.static_cache:
            step = STATIC_CACHE_STEP
            options.update(cache_implementation="static", max_cache_len=-(-capacity // step) * step)
        else:
            batch = kv_cache.batch_cache(bucket, past, pasts, capacity, self.model.config, weight)
            options["cache"] = batch.cache
        for row in bucket:
            row.source = None  # copied into the batch: free the previous turn's tensors early
        start = time.perf_counter()
        with torch.inference_mode():
            output = self.model.generate(input_ids=input_ids.to(weight.device),
                                         attention_mask=mask.to(weight.device), **options)
        latency = time.perf_counter() - start
        new_tokens = output[:, total:].cpu()
        produced = self._produced(new_tokens)
        decoded = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        for r, (row, text, n) in enumerate(zip(bucket, decoded, produced)):
            texts[row.item] = text
            length = int(row.ids.shape[0])
            records.append((row.item, {
                "prompt_tokens": length, "completion_tokens": n, "latency_s": latency,
                "item": row.item, "prefill_tokens": length - pasts[r],
                "cached_tokens": pasts[r], "kv_cache": self.kv_cache}))
            if self.kv_cache:
                first = total - length
                held = batch.cache.get_seq_length() - first
                ids = torch.cat([row.ids, new_tokens[r, :n]])[:held]
                kept.append(batch.row(r, first, ids))

    def _produced(self, new_tokens) -> list[int]:
        """Per row, the tokens it generated: through its end-of-sequence token, else up to the
        padding that follows a lane stopped at its action, else all of them."""
        require("torch", "srelib.policies.llm.providers.hf_chat")
        import torch

        pad = self.tokenizer.pad_token_id
        eos = torch.tensor(_as_list(self.model.generation_config.eos_token_id), dtype=torch.long)
        width = new_tokens.shape[1]
        ends = torch.isin(new_tokens, eos)
        padded = new_tokens == pad
        steps = torch.arange(1, width + 1).expand_as(new_tokens)
        by_eos = torch.where(ends, steps, width + 1).min(dim=1).values
        by_pad = torch.where(padded & ~ends, steps - 1, width + 1).min(dim=1).values
        return torch.minimum(torch.minimum(by_eos, by_pad), torch.tensor(width)).tolist()

    def _generation_options(self) -> dict[str, Any]:
        require("torch", "srelib.policies.llm.providers.hf_chat")
        import torch
        require("transformers", "srelib.policies.llm.providers.hf_chat")
        from transformers import StoppingCriteriaList

        sampling = self.temperature > 0
        options: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "do_sample": sampling,
                                   "pad_token_id": self.tokenizer.pad_token_id}
        if sampling:
            options.update(temperature=self.temperature, top_p=self.top_p)
            torch.manual_seed((self.seed or 0) * 1_000_003 + self._calls)
        else:
            options.update(temperature=None, top_p=None, top_k=None)
        if self.stop_at_action:
            if self._object_tables is None and not self.tools:
                size = max(len(self.tokenizer), self.model.config.get_text_config().vocab_size)
                self._object_tables = ObjectTables(self.tokenizer, size)
            end = action_end(self.tokenizer, self._object_tables, self.tools)
            if end is not None:
                options["stopping_criteria"] = StoppingCriteriaList([end])
        self._calls += 1
        return options

    def _device(self):
        return self.model.get_input_embeddings().weight.device

    def _encode_shared_prefix(self) -> None:
        """Encode (once per system prompt) the prompt text every conversation starts with."""
        require("torch", "srelib.policies.llm.providers.hf_chat")
        import torch

        marker = "\x00srelib-first-turn\x00"
        text = self.chat_prompt([{"role": "system", "content": self.system_prompt},
                                 {"role": "user", "content": marker}])
        prefix = text[:text.index(marker)]
        if self._prefixes.shared_key == prefix:
            return
        ids = torch.tensor(self.tokenizer(prefix, add_special_tokens=False)["input_ids"],
                           dtype=torch.long)
        weight = self.model.get_input_embeddings().weight
        row = Row(0, ids, None, 0)
        batch = kv_cache.batch_cache([row], 0, [0], len(ids), self.model.config, weight)
        with torch.inference_mode():
            self.model(input_ids=ids[None].to(weight.device), cache=batch.cache, use_cache=True)
        self._prefixes.shared = batch.row(0, 0, ids)
        self._prefixes.shared_key = prefix


def _is_loaded(model: Any) -> bool:
    """Whether ``model`` is a loaded model rather than a hub id or a folder."""
    return model is not None and not isinstance(model, (str, os.PathLike))


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]

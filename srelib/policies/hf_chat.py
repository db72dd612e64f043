"""HFTransformersChatPolicy: a local Hugging Face chat model (Gemma on Colab or Runpod).

Prompts go through the tokenizer's own ``apply_chat_template``; a template that rejects the
system role (Gemma's does) gets the system prompt folded into the first user turn. Weights load
in bf16 where the GPU supports it, else fp32, and never in fp16. 4-bit loading goes through
``BitsAndBytesConfig`` (nf4, double quantisation) and only when CUDA is available; otherwise a
message says so and the model loads unquantised. ``act_batch`` generates for many episodes in
one left-padded batch; greedy decoding (``temperature=0``) gives the same replies batched or
one at a time.
"""

from __future__ import annotations

import time
from typing import Any

from srelib.policies.base import ChatPolicyBase
from srelib.policies.prompts import fold_system

_DTYPES = ("auto", "bfloat16", "float32")


def resolve_dtype(torch_dtype: Any = "auto"):
    """The torch dtype to load with: ``auto`` means bf16 on a GPU that supports it, else fp32."""
    import torch

    name = str(torch_dtype).replace("torch.", "")
    if name in ("float16", "half", "fp16"):
        raise ValueError("fp16 is not supported (Gemma overflows in fp16); "
                         f"choose one of {list(_DTYPES)}")
    if name not in _DTYPES:
        raise ValueError(f"unknown torch_dtype {torch_dtype!r}; choose one of {list(_DTYPES)}")
    if name == "auto":
        cuda_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if cuda_bf16 else torch.float32
    return getattr(torch, name)


def quantization_config(load_in_4bit: bool, compute_dtype):
    """The 4-bit config when asked for and CUDA is there; None (with a message) otherwise."""
    import torch

    if not load_in_4bit:
        return None
    if not torch.cuda.is_available():
        print("srelib: 4-bit loading needs CUDA (bitsandbytes); no CUDA device found, so the "
              f"model loads unquantised in {str(compute_dtype).replace('torch.', '')}.")
        return None
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                              bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=compute_dtype)


class HFTransformersChatPolicy(ChatPolicyBase):
    """Chat policy over a local causal LM: a hub id or folder, or a preloaded model+tokenizer.

    The seed's parameters are kept (``model_id`` is accepted as the name of the first one).
    ``reset(seed=...)`` seeds sampling; with ``temperature=0`` decoding is greedy.
    """

    def __init__(self, model_id_or_path: str | None = None, *, model_id: str | None = None,
                 device_map: str | None = "auto", load_in_4bit: bool = True,
                 torch_dtype: Any = "auto", max_new_tokens: int = 512, temperature: float = 0.2,
                 top_p: float = 0.95, max_history: int = 6, model: Any = None,
                 tokenizer: Any = None, max_batch_size: int = 16, max_failures: int = 3,
                 obs_chars: int = 6000, max_prompt_chars: int = 24000, name: str | None = None):
        super().__init__(max_history=max_history, max_failures=max_failures,
                         obs_chars=obs_chars, max_prompt_chars=max_prompt_chars)
        source = model_id_or_path or model_id
        if source is None and (model is None or tokenizer is None):
            raise ValueError("give model_id_or_path, or both model= and tokenizer=")
        self.max_new_tokens, self.temperature = int(max_new_tokens), float(temperature)
        self.top_p, self.max_batch_size = float(top_p), max(1, int(max_batch_size))
        self.dtype = resolve_dtype(torch_dtype)
        if tokenizer is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(source)
        if model is None:
            model = self._load(source, device_map, load_in_4bit)
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("the tokenizer has no chat template; use an instruction-tuned "
                             "(chat) model or set tokenizer.chat_template")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer, self.model = tokenizer, model.eval()
        self.model_id = source or getattr(model.config, "name_or_path", "model")
        self.name = name or f"hf:{self.model_id}"
        self.folds_system: bool | None = None  # learnt from the template on first use
        self._calls = 0

    def __repr__(self) -> str:
        return f"HFTransformersChatPolicy({self.model_id!r}, temperature={self.temperature})"

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        super().reset(seed, task_name)
        self._calls = 0  # sampling seeds restart with the episode

    def _load(self, source: str, device_map: str | None, load_in_4bit: bool):
        import torch
        from transformers import AutoModelForCausalLM

        kwargs: dict[str, Any] = {"dtype": self.dtype}
        quant = quantization_config(load_in_4bit, self.dtype)
        if quant is not None:
            kwargs["quantization_config"] = quant
        if torch.cuda.is_available() and device_map is not None:
            kwargs["device_map"] = device_map
        return AutoModelForCausalLM.from_pretrained(source, **kwargs)

    def chat_prompt(self, messages: list[dict]) -> str:
        """The prompt text from the chat template, folding the system turn in when rejected."""
        if self.folds_system is not True:
            try:
                text = self.tokenizer.apply_chat_template(
                    messages, tokenize=False, add_generation_prompt=True)
                self.folds_system = False
                return text
            except Exception:  # noqa: BLE001 - jinja raises its own TemplateError
                if not messages or messages[0]["role"] != "system" or self.folds_system is False:
                    raise
                self.folds_system = True
        return self.tokenizer.apply_chat_template(
            fold_system(messages), tokenize=False, add_generation_prompt=True)

    def _complete(self, conversations: list[list[dict]]) -> list[str | BaseException]:
        prompts = [self.chat_prompt(m) for m in conversations]
        replies: list[str | BaseException] = []
        for start in range(0, len(prompts), self.max_batch_size):
            replies += self.generate(prompts[start:start + self.max_batch_size])
        return replies

    def generate(self, prompts: list[str]) -> list[str]:
        """Left-padded batched generation of one reply per prompt."""
        import torch

        device = self.model.get_input_embeddings().weight.device
        batch = self.tokenizer(prompts, return_tensors="pt", padding=True,
                               add_special_tokens=False).to(device)
        sampling = self.temperature > 0
        options: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "do_sample": sampling,
                                   "pad_token_id": self.tokenizer.pad_token_id}
        if sampling:
            options.update(temperature=self.temperature, top_p=self.top_p)
            torch.manual_seed((self.seed or 0) * 1_000_003 + self._calls)
        else:
            options.update(temperature=None, top_p=None, top_k=None)
        self._calls += 1
        start = time.perf_counter()
        with torch.inference_mode():
            output = self.model.generate(**batch, **options)
        latency = time.perf_counter() - start
        width = batch["input_ids"].shape[1]
        new_tokens = output[:, width:]
        texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        stops = set(_as_list(self.model.generation_config.eos_token_id)) | {self.tokenizer.pad_token_id}
        rows = zip(new_tokens.tolist(), batch["attention_mask"].sum(1).tolist())
        for item, (row, prompt_len) in enumerate(rows):
            produced = next((i + 1 for i, t in enumerate(row) if t in stops), len(row))
            self._record(int(prompt_len), produced, latency, item=item)
        return texts


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]

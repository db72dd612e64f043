"""Replies end at their action; the buffered cache decodes as transformers' own cache does."""

import pytest

from srelib.env.parse import parse_action
from srelib.policies.llm.providers.hf_chat import HFTransformersChatPolicy, resolve_kv_cache
from srelib.policies.llm.reply_end import token_effects
from srelib.training.tiny_model import tiny_chat_model

ACTION = '{"action_type": "query_logs", "target_service": "auth", "parameters": {"q": "a}{\\"b"}}'
#: After the action: text a reply ran on with, a second object included.
SECOND = '{"action_type": "view_alerts"}'
GARBAGE = f" and then {SECOND} more words}}}} {{"
TOOL_CALL = '<tool_call>{"name": "query_logs", "arguments": {"service": "auth"}}</tool_call>'


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    return tiny_chat_model(tmp_path_factory.getbasetemp() / "tiny_chat_model")


def _policy(tiny_path, **options):
    settings = dict(temperature=0, max_new_tokens=128, load_in_4bit=False, max_batch_size=8)
    return HFTransformersChatPolicy(tiny_path, **{**settings, **options})


class Planted:
    """A logits processor that makes lane ``r`` emit ``plans[r]``, then its last token on."""

    def __init__(self, plans, prompt_width):
        self.plans, self.width = plans, prompt_width

    def __call__(self, input_ids, scores):
        step = input_ids.shape[1] - self.width
        forced = scores.new_full(scores.shape, float("-inf"))
        for r, plan in enumerate(self.plans):
            forced[r, plan[min(step, len(plan) - 1)]] = 0.0
        return forced


def _plant(policy, monkeypatch, texts):
    """Make ``policy``'s next generate call emit ``texts`` (each a list of pieces, tokenized
    apart so that no token straddles two pieces)."""
    from transformers import LogitsProcessorList

    plans = [[i for piece in pieces for i in policy.tokenizer(piece, add_special_tokens=False)
              ["input_ids"]] for pieces in texts]
    original = policy._generation_options

    def options():
        chosen = original()
        chosen["logits_processor"] = LogitsProcessorList([Planted(plans, policy._width)])
        return chosen

    monkeypatch.setattr(policy, "_generation_options", options)
    generate_bucket = policy._generate_bucket

    def bucket(rows, *args):
        from srelib.policies.llm import kv_cache

        policy._width = sum(kv_cache.plan_rows(rows)[:2])
        return generate_bucket(rows, *args)

    monkeypatch.setattr(policy, "_generate_bucket", bucket)
    return plans


def test_token_effects_follow_strings_and_escapes():
    inside, outside = token_effects('"a}\\"{')
    assert inside[0] == (0, 0, 1)  # a string opens: its braces and escaped quote do not count
    assert outside == (False, 1, 0)  # outside an object quotes do not count; { opens one
    assert token_effects("x{}y")[1][0] is True
    assert token_effects("}}")[0][0][1] == -2


def test_each_lane_stops_right_after_its_action(tiny_path, monkeypatch):
    policy = _policy(tiny_path)
    lanes = [[ACTION, GARBAGE], ["Checking the logs. ", ACTION, GARBAGE],
             ["No action yet ", SECOND, GARBAGE]]
    _plant(policy, monkeypatch, lanes)
    mark = len(policy.usage)
    replies = policy.generate(["<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"] * 3)
    assert replies == ["".join(pieces[:-1]) for pieces in lanes]
    action = parse_action(ACTION).action
    assert action["parameters"] == {"q": 'a}{"b'}
    for reply, pieces in zip(replies, lanes):
        assert parse_action(reply).action == parse_action("".join(pieces)).action
    assert parse_action(replies[0]).action == action
    used = [r["completion_tokens"] for r in policy.usage[mark:]]
    assert used == [sum(len(policy.tokenizer(piece, add_special_tokens=False)["input_ids"])
                        for piece in pieces[:-1]) for pieces in lanes]
    assert max(used) < policy.max_new_tokens


def test_tool_call_reply_stops_at_its_close(tiny_path, monkeypatch):
    from transformers import AutoTokenizer

    from srelib.training.chat_format import use_tool_format

    tokenizer = use_tool_format(AutoTokenizer.from_pretrained(tiny_path))
    policy = _policy(tiny_path, tokenizer=tokenizer, tools=True)
    assert policy.tools
    _plant(policy, monkeypatch, [[TOOL_CALL, GARBAGE]])
    prompt = "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"
    reply = policy.generate([prompt])[0]
    assert reply == TOOL_CALL
    assert policy.read_tool_call(prompt, reply) == policy.read_tool_call(prompt, TOOL_CALL + GARBAGE)


@pytest.mark.parametrize("cache", [{"kv_cache": True}, {"kv_cache": False},
                                   {"static_cache": True}], ids=["kept", "reencoded", "static"])
def test_greedy_replies_equal_transformers_own_generate(tiny_path, cache):
    import torch

    policy = _policy(tiny_path, stop_at_action=False, **cache)
    prompts = [policy.chat_prompt([{"role": "user", "content": text}])
               for text in ("Checkout is failing", "orders degraded after a deploy; p99 up")]
    for _ in range(2):  # the second call reuses the kept caches
        replies = policy.generate(prompts)
        batch = policy.tokenizer(prompts, return_tensors="pt", padding=True,
                                 add_special_tokens=False)
        with torch.inference_mode():
            output = policy.model.generate(**batch, max_new_tokens=policy.max_new_tokens,
                                           do_sample=False, temperature=None, top_p=None,
                                           top_k=None, pad_token_id=policy.tokenizer.pad_token_id)
        width = batch["input_ids"].shape[1]
        assert replies == policy.tokenizer.batch_decode(output[:, width:], skip_special_tokens=True)
        prompts = [p + r + "<end_of_turn>\n<start_of_turn>user\nmore<end_of_turn>\n"
                   "<start_of_turn>model\n" for p, r in zip(prompts, replies)]
    assert (policy.usage[-1]["cached_tokens"] > 0) == policy.kv_cache


def test_auto_keeps_caches_except_on_cuda(tiny_path):
    import torch

    assert resolve_kv_cache("auto", torch.device("cpu")) is True
    assert resolve_kv_cache("auto", torch.device("cuda", 0)) is False
    assert resolve_kv_cache(False, torch.device("cpu")) is False
    with pytest.raises(ValueError, match="auto"):
        resolve_kv_cache("sometimes", torch.device("cpu"))
    policy = _policy(tiny_path)
    assert policy.kv_cache is True and "kv_cache=True ('auto')" in repr(policy)
    with pytest.raises(ValueError, match="static_cache"):
        _policy(tiny_path, kv_cache=True, static_cache=True)

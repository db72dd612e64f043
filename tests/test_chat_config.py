"""Chat policy settings as dataclasses: one ChatConfig for every provider, the old keywords
mapped onto it, unknown keywords named, and the retry loop in the base, driven by the config
against a real loopback server."""

import dataclasses
import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.error import URLError
from urllib.request import Request, urlopen

import pytest

from srelib.env.actions import PARSE_ERROR
from srelib.policies import (ChatConfig, ChatPolicyBase, HFChatConfig, HFTransformersChatPolicy,
                             OpenAIChatConfig, OpenAIChatPolicy)
from srelib.policies.llm.config import ALIASES
from srelib.policies.llm.providers import providers
from srelib.training.tiny_model import free_port, tiny_chat_model

OBS = {"incident_title": "Checkout failures", "incident_summary": "orders failing",
       "severity": "SEV2", "current_phase": 1, "steps_taken": 0,
       "valid_actions": ["view_alerts", "check_metrics:orders"]}
SHARED = ChatConfig(temperature=0.0, max_tokens=7, max_history=2, max_failures=4, obs_chars=900,
                    max_prompt_chars=5000, system_prompt="Be brief.", name="same", max_retries=1,
                    backoff=0.25, max_retry_after=2.0, deadline=9.0)


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    return tiny_chat_model(tmp_path_factory.getbasetemp() / "tiny_chat_model")


def test_every_provider_has_a_config_with_the_shared_names():
    shared = [f.name for f in dataclasses.fields(ChatConfig)]
    for name, cls in providers().items():
        assert issubclass(cls.config_class, ChatConfig), name
        own = [f.name for f in dataclasses.fields(cls.config_class)]
        assert own[:len(shared)] == shared, name


def test_every_provider_takes_the_same_chat_config(tiny_path):
    openai = OpenAIChatPolicy(dataclasses.replace(SHARED, model="served-model"), api_key="k")
    hf = HFTransformersChatPolicy(dataclasses.replace(SHARED, model=tiny_path), load_in_4bit=False)
    assert type(openai.config) is OpenAIChatConfig and type(hf.config) is HFChatConfig
    for policy in (openai, hf):
        for field in ("temperature", "max_tokens", "max_history", "max_failures", "obs_chars",
                      "max_prompt_chars", "system_prompt", "name", "max_retries", "backoff",
                      "max_retry_after", "deadline"):
            assert getattr(policy.config, field) == getattr(SHARED, field), (policy, field)
        assert (policy.max_history, policy.obs_chars, policy.max_retries, policy.name) == \
            (2, 900, 1, "same")
        assert policy.conversation() == []
    assert openai.max_tokens == hf.max_new_tokens == 7
    # the provider's own settings sit beside the shared ones, at their defaults
    assert (openai.config.timeout, hf.config.top_p) == (60.0, 0.95)


def test_a_config_and_keywords_combine_keywords_winning():
    config = OpenAIChatConfig(model="m", temperature=0.7, timeout=5.0, api_key="k")
    policy = OpenAIChatPolicy(config, temperature=0.1)
    assert (policy.temperature, policy.timeout, policy.config.temperature) == (0.1, 5.0, 0.1)
    assert config.temperature == 0.7  # the caller's config is not changed
    assert "'k'" not in repr(policy.config)  # the key is not in the config's repr
    positional = OpenAIChatPolicy("m", 5, 0.3, "http://127.0.0.1:9/v1", api_key="k")
    assert (positional.model, positional.max_history, positional.temperature,
            positional.base_url) == ("m", 5, 0.3, "http://127.0.0.1:9/v1")


def test_a_config_in_a_factory_keeps_its_key_out_of_run_json():
    import functools

    from srelib.policies.specs import describe

    key = "sk-test-config-5f3a9c1d"
    factory = functools.partial(OpenAIChatPolicy, OpenAIChatConfig(model="m", api_key=key))
    text = describe(factory)
    assert "OpenAIChatConfig(model='m'" in text and key not in text
    assert factory().config.api_key == key  # the policy still has it


def test_the_old_keywords_map_onto_the_config(tiny_path):
    assert ALIASES == {"model_id_or_path": "model", "model_id": "model", "max_new_tokens": "max_tokens"}
    hf = HFTransformersChatPolicy(model_id_or_path=tiny_path, max_new_tokens=5, load_in_4bit=False)
    assert (hf.config.model, hf.config.max_tokens, hf.max_new_tokens) == (tiny_path, 5, 5)
    assert HFTransformersChatPolicy(model_id=tiny_path, load_in_4bit=False).config.model == tiny_path
    openai = OpenAIChatPolicy(model_id_or_path="m", max_new_tokens=9, api_key="k")
    assert (openai.model, openai.max_tokens) == ("m", 9)
    with pytest.raises(TypeError, match="'max_tokens' and 'max_new_tokens', two names"):
        OpenAIChatPolicy(max_tokens=3, max_new_tokens=9, api_key="k")
    with pytest.raises(TypeError, match="'model' and 'model_id_or_path'"):
        HFTransformersChatPolicy(tiny_path, model_id_or_path=tiny_path)


def test_a_loaded_model_still_comes_as_model(tiny_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_path)
    tokenizer = AutoTokenizer.from_pretrained(tiny_path)
    policy = HFTransformersChatPolicy(model=model, tokenizer=tokenizer, max_new_tokens=4)
    assert policy.model is model and policy.config.model is None
    with pytest.raises(TypeError, match="pass a loaded model as model="):
        HFTransformersChatPolicy(HFChatConfig(model=model), tokenizer=tokenizer)


@pytest.mark.parametrize("cls", [OpenAIChatPolicy, HFTransformersChatPolicy])
def test_an_unknown_keyword_names_the_valid_ones(cls):
    with pytest.raises(TypeError) as raised:
        cls("m", max_token=5)  # a typo: no network, no model is touched first
    message = str(raised.value)
    assert f"{cls.__name__} got unknown keyword argument(s) max_token" in message
    for name in [f.name for f in dataclasses.fields(cls.config_class)] + list(ALIASES):
        assert name in message


def test_a_config_of_another_provider_is_refused():
    with pytest.raises(TypeError, match="takes a OpenAIChatConfig or a ChatConfig, got HFChatConfig"):
        OpenAIChatPolicy(HFChatConfig(model="m"))


@pytest.mark.parametrize("settings, message", [
    ({"max_failures": 0}, "max_failures must be >= 1"), ({"max_retries": -1}, "max_retries"),
    ({"backoff": -0.5}, "backoff"), ({"deadline": 0}, "deadline must be > 0"),
])
def test_bad_settings_fail_when_the_config_is_made(settings, message):
    with pytest.raises(ValueError, match=message):
        ChatConfig(**settings)
    with pytest.raises(ValueError, match=message):
        OpenAIChatPolicy("m", api_key="k", **settings)


# ── retries live in the base: a provider that only makes attempts, over real HTTP ─────────


class Flaky:
    """A loopback HTTP server that drops the connection (no reply at all) on the requests
    whose body names a lane in ``drop`` until that lane has been asked ``fails`` times, then
    answers with an action; it records when each request came."""

    def __init__(self, fails: int, drop: tuple[str, ...] = ("lane-0",)):
        self.seen: dict[str, list[float]] = {}
        self.lock = threading.Lock()
        flaky = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                lane = next((name for name in ("lane-0", "lane-1") if name in body), "lane-0")
                with flaky.lock:
                    times = flaky.seen.setdefault(lane, [])
                    times.append(time.monotonic())
                    drop_it = lane in drop and len(times) <= fails
                if drop_it:
                    self.close_connection = True
                    self.connection.shutdown(2)  # the client sees RemoteDisconnected
                    return
                data = json.dumps({"action_type": "view_alerts"}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class HttpChatPolicy(ChatPolicyBase):
    """A provider with no retry code: ``_complete`` makes one POST per conversation."""

    def __init__(self, url, config=None, **overrides):
        super().__init__(config, **overrides)
        self.url, self.calls = url, []

    def _complete(self, conversations):
        self.calls.append(len(conversations))
        replies = []
        for item, messages in enumerate(conversations):
            start = time.monotonic()
            try:
                with urlopen(Request(self.url, json.dumps(messages).encode()), timeout=5) as reply:
                    replies.append(reply.read().decode())
                self._record(3, 2, time.monotonic() - start, item=item)
            except OSError as error:  # http.client.RemoteDisconnected is a ConnectionError
                self._record(None, None, time.monotonic() - start, item=item, error=repr(error))
                replies.append(error.reason if isinstance(error, URLError) else error)
        return replies


def test_the_base_retries_a_provider_per_its_config(caplog):
    server = Flaky(fails=2)
    try:
        policy = HttpChatPolicy(server.url, ChatConfig(max_retries=2, backoff=0.2))
        caplog.set_level(logging.WARNING)
        action = policy(OBS, 1, "memory_leak")
    finally:
        server.close()
    assert action["action_type"] == "view_alerts"
    times = server.seen["lane-0"]
    assert len(times) == 3 and policy.calls == [1, 1, 1]
    assert 0.2 <= times[1] - times[0] < 1.0 and 0.4 <= times[2] - times[1] < 1.4  # 0.2 * 2**n
    assert [u["attempts"] for u in policy.usage] == [1, 2, 3]
    assert [u.get("error") is None for u in policy.usage] == [False, False, True]
    assert "retry 1 of 2" in caplog.text and "retry 2 of 2" in caplog.text


def test_retries_stop_at_the_configured_count_with_a_clear_error():
    server = Flaky(fails=5)
    try:
        policy = HttpChatPolicy(server.url, max_retries=1, backoff=0.01, max_failures=2)
        action = policy(OBS, 1, "memory_leak")
    finally:
        server.close()
    assert len(server.seen["lane-0"]) == 2
    assert action["action_type"] == PARSE_ERROR
    assert "the model call failed: RemoteDisconnected" in action["parameters"]["reason"]
    assert policy.parse_failures == 1  # the lane goes on: nothing lost


def test_a_wait_past_the_deadline_ends_the_call():
    server = Flaky(fails=5)
    try:
        policy = HttpChatPolicy(server.url, max_retries=5, backoff=1.0, deadline=0.5)
        start = time.monotonic()
        action = policy(OBS, 1, "memory_leak")
        elapsed = time.monotonic() - start
    finally:
        server.close()
    assert elapsed < 0.5 and len(server.seen["lane-0"]) == 1
    assert action["action_type"] == PARSE_ERROR


def test_a_dead_endpoint_is_retried_then_named():
    policy = HttpChatPolicy(f"http://127.0.0.1:{free_port()}/", max_retries=2, backoff=0.01)
    action = policy(OBS, 1, "memory_leak")
    assert action["action_type"] == PARSE_ERROR and "ConnectionRefusedError" in action["parameters"]["reason"]
    assert [u["attempts"] for u in policy.usage] == [1, 2, 3]


def test_only_the_failed_lane_of_a_batch_is_asked_again():
    server = Flaky(fails=1, drop=("lane-1",))
    items = [({**OBS, "incident_title": f"lane-{lane}"}, 1, "memory_leak", lane) for lane in range(2)]
    try:
        policy = HttpChatPolicy(server.url, max_retries=1, backoff=0.01)
        actions = policy.act_batch(items)
    finally:
        server.close()
    assert [a["action_type"] for a in actions] == ["view_alerts"] * 2
    assert policy.calls == [2, 1]
    assert (len(server.seen["lane-0"]), len(server.seen["lane-1"])) == (1, 2)
    # the retry's record names lane 1 of the batch, not its place in the retry's call
    assert [(u["item"], u["attempts"]) for u in policy.usage] == [(0, 1), (1, 1), (1, 2)]


def test_errors_retrying_cannot_fix_are_not_retried():
    class Refusing(ChatPolicyBase):
        def _complete(self, conversations):
            self.calls = getattr(self, "calls", 0) + 1
            return [ValueError("the model said no")] * len(conversations)

    policy = Refusing(max_retries=3, backoff=0.01)
    action = policy(OBS, 1, "memory_leak")
    assert action["action_type"] == PARSE_ERROR and "the model said no" in action["parameters"]["reason"]
    assert policy.calls == 1

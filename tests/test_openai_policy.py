"""OpenAIChatPolicy against a loopback stub server and a real ``transformers serve``.

The stub is a real HTTP server (stdlib, in a thread, on 127.0.0.1) that answers with scripted
chat-completion replies and records every request, so retries, timeouts, malformed replies and
concurrency are exercised through the real ``openai`` client.
"""

import asyncio
import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import srelib
from srelib.env.actions import GIVE_UP, PARSE_ERROR
from srelib.policies import OpenAIChatPolicy
from srelib.policies.llm.prompts import SYSTEM_PROMPT

SECRET = "sk-test-DO-NOT-LEAK-5f3a9c"


def completion(content):
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}}


class Stub:
    """Scripted replies, the last one repeating: each is (status, body dict or raw str, delay_s)
    with an optional fourth item, a dict of extra headers, or a function of the request (body,
    headers) that returns such a tuple."""

    def __init__(self, script):
        self.script, self.requests = list(script), []
        self.active = self.max_active = 0
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with stub.lock:
                    stub.requests.append({"body": body, "auth": self.headers.get("Authorization")})
                    entry = stub.script.pop(0) if len(stub.script) > 1 else stub.script[0]
                    status, reply, delay, *extra = entry(body, self.headers) if callable(entry) else entry
                    stub.active += 1
                    stub.max_active = max(stub.max_active, stub.active)
                try:
                    time.sleep(delay)
                    data = (reply if isinstance(reply, str) else json.dumps(reply)).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in (extra[0] if extra else {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on a delayed reply (the timeout test)
                finally:
                    with stub.lock:
                        stub.active -= 1

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def policy_for(stub, **kwargs):
    kwargs.setdefault("backoff", 0.01)
    return OpenAIChatPolicy("stub-model", base_url=stub.url, api_key=SECRET, **kwargs)


OBS = {"incident_title": "Checkout failures", "incident_summary": "orders failing",
       "severity": "SEV2", "current_phase": 1, "steps_taken": 0,
       "valid_actions": ["view_alerts", "check_metrics:orders"]}
VIEW = completion('{"action_type": "view_alerts"}')


def test_retries_on_429_and_500_then_succeeds():
    script = [(429, {"error": {"message": "slow down"}}, 0), (500, {"error": {"message": "boom"}}, 0),
              (503, "upstream unavailable", 0), (200, VIEW, 0)]
    with Stub(script) as stub:
        policy = policy_for(stub, max_retries=3)
        action = policy(OBS, 1, "memory_leak")
    assert action["action_type"] == "view_alerts"
    assert len(stub.requests) == 4
    assert policy.usage[-1]["attempts"] == 4
    assert policy.usage[-1]["prompt_tokens"] == 11 and policy.usage[-1]["total_tokens"] == 16
    assert policy.usage[-1]["latency_s"] > 0


def test_retries_after_a_timeout():
    with Stub([(200, VIEW, 2.0), (200, VIEW, 0)]) as stub:
        policy = policy_for(stub, timeout=0.3, max_retries=1)
        start = time.perf_counter()
        action = policy(OBS, 1, "memory_leak")
    assert action["action_type"] == "view_alerts"
    assert len(stub.requests) == 2 and time.perf_counter() - start < 2.0


def test_retries_are_bounded_and_client_errors_not_retried():
    with Stub([(500, {"error": {"message": "boom"}}, 0)]) as stub:
        policy = policy_for(stub, max_retries=2, max_failures=5, fold_system=False)
        action = policy(OBS, 1, "memory_leak")
    assert len(stub.requests) == 3
    assert action["action_type"] == PARSE_ERROR
    assert "the model call failed: InternalServerError" in action["parameters"]["reason"]
    with Stub([(400, {"error": {"message": "bad request"}}, 0)]) as stub:
        policy = policy_for(stub, max_retries=3, fold_system=False)
        action = policy(OBS, 1, "memory_leak")
    assert len(stub.requests) == 1 and "BadRequestError" in action["parameters"]["reason"]


@pytest.mark.parametrize("reply,reason", [
    (completion(""), "empty"),
    (completion(None), "empty"),
    (completion("Sure! First I would look at the alerts."), "no JSON object"),
    ({"id": "x", "object": "chat.completion", "choices": []}, "no choices"),
    ("this is not json at all", "model call failed"),
])
def test_malformed_and_empty_replies_become_parse_errors(reply, reason):
    with Stub([(200, reply, 0)]) as stub:
        policy = policy_for(stub, max_retries=0)
        action = policy(OBS, 1, "memory_leak")
    assert action["action_type"] == PARSE_ERROR
    assert reason in action["parameters"]["reason"]
    assert policy.parse_failures == 1


def test_a_server_without_a_system_role_is_learnt_once():
    def gemma_like(body, headers):  # like transformers serve with Gemma's template
        if body["messages"][0]["role"] == "system":
            return 500, "Internal Server Error", 0
        return 200, VIEW, 0

    with Stub([gemma_like]) as stub:
        policy = policy_for(stub, max_retries=1)
        assert policy(OBS, 1, "memory_leak")["action_type"] == "view_alerts"
        assert policy.fold_system is True and len(stub.requests) == 3
        policy({**OBS, "steps_taken": 1}, 1, "memory_leak")
    assert len(stub.requests) == 4
    folded = stub.requests[-1]["body"]["messages"]
    assert folded[0]["role"] == "user" and folded[0]["content"].startswith(SYSTEM_PROMPT)


def test_dead_endpoint_gives_feedback_then_gives_up():
    from srelib.training.tiny_model import free_port

    policy = OpenAIChatPolicy("m", base_url=f"http://127.0.0.1:{free_port()}/v1", api_key=SECRET,
                              max_retries=1, backoff=0.01, timeout=2, max_failures=2)
    first = policy(OBS, 1, "memory_leak")
    second = policy({**OBS, "steps_taken": 1}, 1, "memory_leak")
    assert first["action_type"] == PARSE_ERROR
    assert "APIConnectionError" in first["parameters"]["reason"]
    assert second["action_type"] == GIVE_UP


def test_parse_failures_are_explained_and_end_the_episode():
    with Stub([(200, completion("Let me think about it first."), 0)]) as stub:
        policy = policy_for(stub, max_failures=3)
        env = srelib.IncidentEnv()
        obs, info = env.reset(task="memory_leak", pool="C", seed=3)
        policy.reset(seed=3, task_name="memory_leak")
        done, kinds = False, []
        while not done:
            action = policy(obs, obs["current_phase"], "memory_leak")
            kinds.append(action["action_type"])
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    assert kinds == [PARSE_ERROR, PARSE_ERROR, GIVE_UP]
    assert truncated and info["ended_by"] == "give_up"
    assert policy.parse_failures == 3
    # The second request carries the env's explanation of the first failure.
    second_prompt = stub.requests[1]["body"]["messages"][-1]["content"]
    assert "could not be parsed" in second_prompt and "no JSON object" in second_prompt
    # The system prompt and the incident are still the first two messages.
    messages = stub.requests[2]["body"]["messages"]
    assert messages[0]["role"] == "system" and "propose_patch" in messages[0]["content"]
    assert "INCIDENT" in messages[1]["content"]


def test_act_batch_runs_calls_concurrently_even_inside_an_event_loop():
    items = [({**OBS, "steps_taken": 0}, 1, "memory_leak", lane) for lane in range(4)]
    with Stub([(200, VIEW, 0.4)]) as stub:
        policy = policy_for(stub, max_concurrency=4)

        async def in_notebook():  # Jupyter runs cells inside a running event loop
            return policy.act_batch(items)

        start = time.perf_counter()
        actions = asyncio.run(in_notebook())
        elapsed = time.perf_counter() - start
    assert [a["action_type"] for a in actions] == ["view_alerts"] * 4
    assert stub.max_active >= 3 and elapsed < 1.2
    with Stub([(200, VIEW, 0.05)]) as stub:
        policy_for(stub, max_concurrency=1).act_batch(items)
    assert stub.max_active == 1


def test_key_never_appears_in_output(caplog, capsys):
    def echo_auth(status):  # a hostile server that quotes the credentials back
        return lambda body, headers: (status, {"error": {
            "message": f"invalid key {headers.get('Authorization')}"}}, 0)

    caplog.set_level(logging.DEBUG)
    with Stub([echo_auth(500), echo_auth(401)]) as stub:
        policy = policy_for(stub, max_retries=2)
        action = policy(OBS, 1, "memory_leak")
    assert stub.requests[0]["auth"] == f"Bearer {SECRET}"  # the key really was sent
    assert action["action_type"] == PARSE_ERROR and "<redacted>" in action["parameters"]["reason"]
    outputs = [repr(policy), str(policy), json.dumps(action), json.dumps(policy.usage),
               caplog.text, *capsys.readouterr()]
    assert "retry 1 of 2" in caplog.text
    for text in outputs:
        assert SECRET not in text


def test_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    policy = OpenAIChatPolicy("m")
    assert policy.base_url == "http://127.0.0.1:9/v1"
    assert SECRET not in repr(policy)
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAIChatPolicy("m", max_concurrency=0)


# ── a real OpenAI-compatible server: transformers serve of the tiny model ─────────────────

@pytest.fixture(scope="module")
def served_tiny_model(tmp_path_factory):
    from srelib.training.tiny_model import serve_tiny_model

    with serve_tiny_model(tmp_path_factory.getbasetemp() / "tiny_chat_model") as served:
        yield served.base_url, served.model


@pytest.mark.parametrize("tools", [False, True])
def test_full_episodes_against_transformers_serve(served_tiny_model, tools):
    """With ``tools=True`` the server takes the tool definitions; a model that answers in text
    (the tiny one does) still has its actions read from the text."""
    url, path = served_tiny_model
    policy = OpenAIChatPolicy(path, base_url=url, api_key="unused", temperature=0,
                              max_tokens=24, timeout=60, max_retries=1, max_failures=2,
                              tools=tools)
    env = srelib.IncidentEnv()
    for seed in (0, 1):
        obs, info = env.reset(task="memory_leak", pool="C", seed=seed)
        policy.reset(seed=seed, task_name="memory_leak")
        done, steps = False, 0
        while not done:
            action = policy(obs, obs["current_phase"], "memory_leak")
            obs, _, terminated, truncated, info = env.step(action)
            done, steps = terminated or truncated, steps + 1
        assert "score" in info and steps >= 1
        assert info["ended_by"] in ("give_up", "budget") or terminated
    # The tiny model's Gemma-style template rejects the system role: the policy learnt to fold.
    # In tool turns the system text already opens the first user turn, so nothing was learnt.
    assert policy.fold_system is (None if tools else True)
    answered = [u for u in policy.usage if u.get("error") is None]
    assert len(answered) >= 2 and all(u["completion_tokens"] for u in answered)
    # After the fold the server refuses no call. A dropped connection that its retry answered
    # is no refusal: transformers serve resets one now and then on a loaded machine.
    assert not [u["error"] for u in policy.usage[2:] if "Error code:" in (u.get("error") or "")]
    assert policy.tools is tools  # the server accepted the tools: no fallback was needed


def test_served_model_stops_with_its_block(tmp_path_factory):
    import socket

    from srelib.training.tiny_model import serve_tiny_model

    with serve_tiny_model(tmp_path_factory.getbasetemp() / "tiny_chat_model") as served:
        host, port = served.base_url.split("//")[1].split("/")[0].split(":")
        assert host == "127.0.0.1"
        with socket.create_connection((host, int(port)), timeout=2):
            pass
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=2).close()


# ── contained faults (issue 12): deadlines, Retry-After, one bad lane, no keys on disk ─────


class Trickle:
    """A real loopback server that sends headers, then its body one byte every ``every_s``,
    and records when the client hung up."""

    def __init__(self, every_s: float):
        self.every_s, self.hung_up = every_s, threading.Event()
        trickle = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                body = json.dumps(VIEW).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    for byte in body:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(trickle.every_s)
                except (BrokenPipeError, ConnectionResetError):
                    trickle.hung_up.set()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_trickled_body_cannot_hold_a_call_past_its_deadline():
    server = Trickle(every_s=1.0)  # ~250 bytes: a per-read timeout would let this run 4 minutes
    try:
        policy = OpenAIChatPolicy("m", base_url=server.url, api_key=SECRET, timeout=2.5,
                                  max_retries=0)
        start = time.perf_counter()
        action = policy(OBS, 1, "memory_leak")
        elapsed = time.perf_counter() - start
        assert 2.4 < elapsed < 3.0
        assert action["action_type"] == PARSE_ERROR and "ReplyTimeout" in action["parameters"]["reason"]
        assert server.hung_up.wait(5)  # the connection was closed, not left to trickle on
    finally:
        server.close()


def test_the_deadline_covers_every_retry():
    server = Trickle(every_s=0.3)
    try:
        policy = OpenAIChatPolicy("m", base_url=server.url, api_key=SECRET, timeout=1.0,
                                  deadline=2.5, max_retries=10, backoff=0.01, max_failures=5)
        start = time.perf_counter()
        policy(OBS, 1, "memory_leak")
        assert time.perf_counter() - start < 3.0
        assert policy.usage[-1]["attempts"] == 3 and "ReplyTimeout" in policy.usage[-1]["error"]
    finally:
        server.close()


def _rate_limited(retry_after: str):
    """A 429 asking to wait ``retry_after``, then a good reply; and the times of the requests."""
    calls = []

    def reply(body, headers):
        calls.append(time.perf_counter())
        if len(calls) == 1:
            return 429, {"error": {"message": "slow down"}}, 0, {"Retry-After": retry_after}
        return 200, VIEW, 0
    return reply, calls


@pytest.mark.parametrize("retry_after, cap, low, high", [
    ("1", 30.0, 0.95, 1.6),            # honoured
    ("100", 0.5, 0.45, 0.9),           # capped
    ("Wed, 21 Oct 2015 07:28:00 GMT", 30.0, 0.0, 0.5),  # an HTTP date in the past: no wait
])
def test_retry_after_is_honoured_up_to_a_cap(retry_after, cap, low, high):
    reply, calls = _rate_limited(retry_after)
    with Stub([reply]) as stub:
        policy = policy_for(stub, max_retries=2, max_retry_after=cap, timeout=10)
        assert policy(OBS, 1, "memory_leak")["action_type"] == "view_alerts"
    assert len(calls) == 2 and low <= calls[1] - calls[0] < high


def test_a_retry_after_beyond_the_deadline_ends_the_call_at_once():
    reply, calls = _rate_limited("50")
    with Stub([reply]) as stub:
        policy = policy_for(stub, max_retries=3, max_retry_after=60, timeout=1, deadline=2)
        start = time.perf_counter()
        action = policy(OBS, 1, "memory_leak")
    assert time.perf_counter() - start < 1.0 and len(calls) == 1
    assert "RateLimitError" in action["parameters"]["reason"]


MALFORMED = {
    "number content": (200, completion(123), 0),
    "list content": (200, completion([{"type": "text", "text": "hi"}]), 0),
    "no message": (200, {"id": "c", "object": "chat.completion", "choices": [{"index": 0}]}, 0),
    "choices not a list": (200, {"choices": {"0": VIEW}}, 0),
    "a JSON list": (200, [VIEW], 0),
    "cut-off JSON": (200, json.dumps(VIEW)[:40], 0),
    "deeply nested JSON": (200, "[" * 5000 + "]" * 5000, 0),
    "usage as strings": (200, dict(completion("hello"), usage={"prompt_tokens": "many"}), 0),
    "server error": (500, {"error": {"message": "boom"}}, 0),
}


@pytest.mark.parametrize("kind", list(MALFORMED))
def test_a_bad_reply_in_a_batch_affects_only_its_own_lane(kind):
    def by_lane(body, headers):  # lane 2's conversation gets the bad reply
        return MALFORMED[kind] if "lane-2" in json.dumps(body["messages"]) else (200, VIEW, 0)

    items = [({**OBS, "incident_title": f"lane-{lane}"}, 1, "memory_leak", lane) for lane in range(4)]
    with Stub([by_lane]) as stub:
        actions = policy_for(stub, max_retries=0, fold_system=False).act_batch(items)
    kinds = [a["action_type"] for a in actions]
    assert kinds[:2] + kinds[3:] == ["view_alerts"] * 3 and kinds[2] == PARSE_ERROR


def test_one_malformed_reply_does_not_end_the_other_episodes_of_a_lockstep_batch():
    served = []

    def second_is_bad(body, headers):
        served.append(1)
        return (200, completion(123), 0) if len(served) == 2 else (200, VIEW, 0)

    with Stub([second_is_bad]) as stub:
        frame = srelib.evaluate({"llm": policy_for(stub, max_retries=0, max_concurrency=1)},
                                tasks=["memory_leak"], pools=["C"], seeds=4, max_steps=2,
                                progress=False)
    assert list(frame.ended_by) == ["max_steps"] * 4
    assert sorted(frame.parse_failures) == [0, 0, 0, 1]


def test_api_keys_never_reach_run_json(tmp_path):
    import functools

    hf_token = "hf_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6"
    factory = functools.partial(OpenAIChatPolicy, "m", base_url="http://127.0.0.1:9/v1",
                                api_key=SECRET, max_retries=0, max_failures=1,
                                name=f"llm-{hf_token}")
    srelib.evaluate({"llm": factory}, tasks=["memory_leak"], pools=["C"], seeds=1, max_steps=1,
                    out=tmp_path, progress=False)
    text = (tmp_path / "run.json").read_text()
    assert SECRET not in text and hf_token not in text
    described = json.loads(text)["config"]["policies"]["llm"]
    assert "api_key=<redacted>" in described and "base_url='http://127.0.0.1:9/v1'" in described


def tool_reply(name, arguments):
    body = completion(None)
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": "t1", "type": "function", "function": {"name": name, "arguments": arguments}}]
    return body


def test_tools_are_sent_and_tool_calls_read_as_actions():
    from srelib.policies.llm.tools import tool_definitions

    script = [(200, tool_reply("check_metrics", '{"target_service": "orders"}'), 0),
              (200, tool_reply("no_such_action", "{}"), 0)]
    with Stub(script) as stub:
        policy = policy_for(stub, tools=True)
        action = policy(OBS, 1, "memory_leak")
        assert stub.requests[0]["body"]["tools"] == tool_definitions()
        assert (action["action_type"], action["target_service"]) == ("check_metrics", "orders")
        refused = policy(OBS, 1, "memory_leak")
    assert refused["action_type"] == PARSE_ERROR
    assert "unknown tool" in refused["parameters"]["reason"]


def test_with_tools_the_conversation_follows_the_tool_protocol():
    """Each action goes back as an assistant tool call with an id and JSON-string arguments,
    and its result as a ``tool`` message answering that id, as OpenAI's API requires."""
    script = [(200, tool_reply("view_alerts", "{}"), 0),
              (200, tool_reply("check_metrics", '{"target_service": "orders"}'), 0)]
    with Stub(script) as stub:
        policy = policy_for(stub, tools=True)
        for step in range(3):
            policy({**OBS, "steps_taken": step}, 1, "memory_leak")
    sent = stub.requests[-1]["body"]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "tool"]
    assert sent[0]["content"].startswith(SYSTEM_PROMPT)  # the system text opens the first turn
    calls = [m["tool_calls"][0] for m in sent if m["role"] == "assistant"]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
        ("view_alerts", {}), ("check_metrics", {"target_service": "orders"})]
    answers = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert answers == [c["id"] for c in calls] and len(set(answers)) == 2
    assert "Call one tool." in sent[-1]["content"]


def test_a_server_without_tool_support_is_asked_again_without_tools():
    def no_tools(body, headers):
        if "tools" in body:
            return 400, {"error": {"message": "tools are not supported"}}, 0
        return 200, VIEW, 0

    with Stub([no_tools]) as stub:
        policy = policy_for(stub, tools=True)
        first = policy(OBS, 1, "memory_leak")
        second = policy(OBS, 1, "memory_leak")
    assert first["action_type"] == second["action_type"] == "view_alerts"
    sent = ["tools" in r["body"] for r in stub.requests]
    # refused with tools (the conversation of tool turns already folds the system prompt, the
    # other thing a 400 may mean), then asked without tools, then never with them again
    assert sent == [True, False, False]
    assert policy.tools is False
    # the action it took went back as JSON text, its result as a user turn
    last = stub.requests[-1]["body"]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user"]
    assert json.loads(last[1]["content"])["action_type"] == "view_alerts"


def test_a_key_the_endpoint_echoes_in_any_case_or_encoding_is_not_written(tmp_path):
    """The hostile endpoint quotes the key back lower-cased, upper-cased, URL-encoded and in
    base64, in error bodies and in a reply the episode keeps; nothing written holds any form."""
    import base64
    import functools
    from urllib.parse import quote

    key = "Zx81LmQ0aP9vT4r2/Yc6Wb+3Nd"  # no known prefix; '/' and '+' change when encoded
    forms = [key, key.lower(), key.upper(), quote(key, safe=""),
             base64.b64encode(f"user:{key}".encode()).decode()]
    echo = " ".join(forms)
    declare = {"action_type": "declare_root_cause", "target_service": None,
               "parameters": {"root_cause": f"I saw {echo}", "service": "orders"}}
    script = [(200, completion(json.dumps(declare)), 0), (400, {"error": {"message": f"bad key {echo}"}}, 0)]
    with Stub(script) as stub:
        factory = functools.partial(OpenAIChatPolicy, "m", base_url=stub.url, api_key=key,
                                    max_retries=0, max_failures=3)
        srelib.evaluate({"llm": factory}, tasks=["memory_leak"], pools=["C"], seeds=1, max_steps=3,
                        out=tmp_path, progress=False)
    assert stub.requests and stub.requests[0]["auth"] == f"Bearer {key}"  # the key was sent
    written = "".join(p.read_text() for p in tmp_path.iterdir() if p.suffix in (".json", ".jsonl"))
    assert "I saw <redacted>" in written and "bad key <redacted>" in written, "the echo must be stored"
    for form in forms + [base64.b64encode(key.encode()).decode()[:-4]]:
        assert form not in written


@pytest.mark.parametrize("reply,tools", [
    (completion('Thinking \ud800 then {"action_type": "view_alerts"}'), False),
    (completion('{"action_type": "view_alerts", "parameters": {"note": "\\ud800"}}'), False),
    (tool_reply("view_alerts", '{"note": "\\ud800"}'), True),
], ids=["in-text", "escaped-in-json", "tool-call"])
def test_a_reply_with_a_lone_surrogate_does_not_break_the_calls_after_it(reply, tools):
    """The reply stays in the conversation; the client sends UTF-8, which has no lone surrogate."""
    then = tool_reply("view_alerts", "{}") if tools else VIEW
    with Stub([(200, json.dumps(reply), 0), (200, then, 0)]) as stub:
        policy = policy_for(stub, max_retries=0, tools=tools)
        assert policy(OBS, 1, "memory_leak")["action_type"] == "view_alerts"
        assert policy({**OBS, "steps_taken": 1}, 1, "memory_leak")["action_type"] == "view_alerts"
    assert len(stub.requests) == 2

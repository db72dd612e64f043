"""``srelib serve`` over real loopback sockets: OpenEnv's EnvClient, raw WebSocket and HTTP
clients, RemoteEnv in srelib's own runners. Every server binds 127.0.0.1 only."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("openenv")

import requests  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

import srelib  # noqa: E402
from srelib.policies.registry import build_policy  # noqa: E402
from srelib.env.actions import ACTION_SPECS, ActionType  # noqa: E402
from srelib.serve.remote import RemoteEnv, SreClient  # noqa: E402
from srelib.runners.rollout import reset_policy  # noqa: E402
from srelib.serve.server import running  # noqa: E402
from srelib.serve.wire import SreAction, observation_dict  # noqa: E402
from srelib.training.tiny_model import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: (task, pool, seed) of the concurrent sessions: every pool, train and held-out tasks.
EPISODES = [(task, pool, seed)
            for task, pool in [("memory_leak", "A"), ("cascading_failure", "B"),
                               ("distributed_deadlock", "C"), ("aliased_fault", "A"),
                               ("circuit_breaker_noop", "C"), ("info_ordering", "B"),
                               ("heldout_aliased_severity", "D"),
                               ("heldout_confidence_ordering", "D")]
            for seed in (1, 2)]


def policy():
    return build_policy("HeuristicPhase1Policy", "RevertPhase2Policy")


def in_process(task, pool, seed):
    """Observations, rewards and infos of the scripted policy's episode in this process."""
    env, agent = srelib.IncidentEnv(), policy()
    obs, info = env.reset(task=task, pool=pool, seed=seed)
    reset_policy(agent, seed, task)
    seen = [(obs, None, info)]
    while not obs["done"]:
        obs, reward, _term, _trunc, info = env.step(agent(obs, obs["current_phase"], task))
        seen.append((obs, reward, info))
    return seen


def active_sessions(url) -> int:
    return requests.get(f"{url}/sessions", timeout=10).json()["active_sessions"]


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def url():
    with running(max_sessions=20, max_per_client=20) as base:  # 16 sessions from this host
        yield base


# ---- point 2: OpenEnv's own client, 16 sessions at once


def test_sixteen_envclient_sessions_match_in_process(url):
    async def episode(client: SreClient, task, pool, seed):
        agent = policy()
        result = await client.reset(task=task, pool=pool, seed=seed)
        reset_policy(agent, seed, task)
        seen = []
        while True:
            fields = result.observation.model_dump(exclude={"reward", "done"})
            obs = observation_dict(fields, result.done)
            seen.append((obs, result.reward, result.observation.info))
            if result.done:
                return seen
            action = SreAction(**agent(obs, obs["current_phase"], task))
            result = await client.step(action)

    async def sixteen():
        clients = [SreClient(base_url=url) for _ in EPISODES]
        await asyncio.gather(*(c.connect() for c in clients))
        try:
            held = active_sessions(url)
            runs = await asyncio.gather(*(episode(c, *e) for c, e in zip(clients, EPISODES)))
        finally:
            await asyncio.gather(*(c.close() for c in clients))
        return held, runs

    held, runs = asyncio.run(sixteen())
    assert held == 16
    for (task, pool, seed), remote in zip(EPISODES, runs):
        assert remote == in_process(task, pool, seed), (task, pool, seed)
        assert remote[-1][2]["score"]["final"] is not None
    wait_for(lambda: active_sessions(url) == 0, 10, "closed clients free their sessions")


def test_sixteen_async_remote_envs_match_in_process(url):
    """srelib's own client (srelib.serve.client), 16 sessions on one event loop."""
    from srelib.serve.remote import AsyncRemoteEnv

    async def episode(task, pool, seed):
        async with AsyncRemoteEnv(url) as env:
            agent = policy()
            obs, info = await env.reset(task=task, pool=pool, seed=seed)
            reset_policy(agent, seed, task)
            seen = [(obs, None, info)]
            while not obs["done"]:
                obs, reward, _term, _trunc, info = await env.step(
                    agent(obs, obs["current_phase"], task))
                seen.append((obs, reward, info))
            assert (await env.trajectory())[-1]["step"] == len(seen) - 1
            return seen

    async def sixteen():
        return await asyncio.gather(*(episode(*e) for e in EPISODES))

    for (task, pool, seed), remote in zip(EPISODES, asyncio.run(sixteen())):
        assert remote == in_process(task, pool, seed), (task, pool, seed)
    wait_for(lambda: active_sessions(url) == 0, 10, "closed clients free their sessions")


def _typed(value):
    """``value`` with every leaf paired with its type: 1 and 1.0 differ."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return type(value).__name__, value


@pytest.mark.parametrize("encoder", ["orjson", "json"])
def test_the_websocket_reply_is_openenvs_serialization_of_the_typed_observation(encoder,
                                                                                monkeypatch):
    """srelib's /ws builds replies from the environment's dict (srelib.serve.ws); they carry
    the keys, values and JSON types OpenEnv's serialize_observation of the pydantic model gives,
    for every step of episodes of every pool, an invalid action and a parse error included;
    with orjson and without it."""
    from openenv.core.env_server import serialize_observation
    from openenv.core.env_server.types import WSObservationResponse

    from srelib.serve import wire
    from srelib.serve.server import _observation
    from srelib.serve.wire import observation_message

    if encoder == "json":
        monkeypatch.setattr(wire, "orjson", None)

    checked = 0
    for task, pool, seed in EPISODES[::3]:
        env, agent = srelib.IncidentEnv(), policy()
        obs, info = env.reset(task=task, pool=pool, seed=seed)
        reset_policy(agent, seed, task)
        outcomes = [(obs, None, False, False, info),
                    env.step({"action_type": "no_such_action"}), env.step("not an action")]
        while not outcomes[-1][0]["done"]:
            obs = outcomes[-1][0]
            outcomes.append(env.step(agent(obs, obs["current_phase"], task)))
        for outcome in outcomes:
            typed = WSObservationResponse(data=serialize_observation(_observation(*outcome)))
            assert _typed(json.loads(observation_message(*outcome))) == \
                _typed(json.loads(typed.model_dump_json())), (task, outcome[0]["steps_taken"])
            checked += 1
    assert checked > 40


# ---- point 3: RemoteEnv in srelib's runners


def test_run_episode_and_evaluate_on_a_remote_env(url):
    for task, pool, seed in EPISODES[:6]:
        with RemoteEnv(url) as env:
            remote = srelib.run_episode(env, policy(), task=task, pool=pool, seed=seed)
        local = srelib.run_episode(srelib.IncidentEnv(), policy(), task=task, pool=pool,
                                   seed=seed)
        remote.wall_s = local.wall_s = 0.0
        assert remote == local
    grid = dict(tasks=["memory_leak", "aliased_fault"], pools=["A", "C"], seeds=2,
                progress=False)
    local = srelib.evaluate({"h": policy}, **grid).drop(columns="wall_s")
    remote = srelib.evaluate({"h": policy}, env=lambda: RemoteEnv(url), workers=2, **grid)
    assert remote.drop(columns="wall_s").equals(local)
    wait_for(lambda: active_sessions(url) == 0, 10, "runners close their sessions")


def test_ablate_on_a_remote_env(url):
    from srelib.analysis.ablations import ablate

    conditions = {"heuristic": policy,
                  "null": lambda: build_policy("NullPhase1Policy", "RevertPhase2Policy")}
    grid = dict(tasks=["memory_leak", "distributed_deadlock"], pools=["C"], seeds=2)
    local = ablate(conditions, **grid)
    remote = ablate(conditions, env=lambda: RemoteEnv(url), **grid)
    assert remote.differences.equals(local.differences)
    assert remote.frame.drop(columns="wall_s").equals(local.frame.drop(columns="wall_s"))


def test_remote_env_keeps_the_in_process_contract(url):
    local = srelib.IncidentEnv()
    with RemoteEnv(url) as env:
        with pytest.raises(ValueError, match="valid tasks"):
            env.reset(task="no_such_task")
        with pytest.raises(RuntimeError, match="reset"), RemoteEnv(url) as fresh:
            fresh.step({"action_type": "view_alerts"})
        assert env.reset(task="memory_leak", pool="C", seed=5) == \
            local.reset(task="memory_leak", pool="C", seed=5)
        # agent mistakes are the environment's to judge, exactly as in process
        for action in ({"action_type": "no_such_action"}, {"action_type": "query_logs"},
                       {"action_type": "query_logs", "target_service": "nowhere"},
                       {"action_type": "view_alerts", "reasoning": "policies add keys"},
                       "query_logs:orders", "not an action at all"):
            assert env.step(action) == local.step(action)
        # what cannot be a typed action becomes a parse error that says why; no exception
        obs, _reward, _term, _trunc, info = env.step(["view_alerts"])
        assert info["valid"] is False and "must be a dict" in info["error"]
        obs, _reward, _term, _trunc, info = env.step({"action_type": 7})
        assert "wrong types" in info["error"] and "action_type" in info["error"]
        assert env.trajectory[:6] == local.trajectory[:6]
        assert env.scenario.name == local.scenario.name == "memory_leak"


def test_episode_stepper_widget_on_a_remote_env(url):
    pytest.importorskip("ipywidgets")
    from srelib.widgets import EpisodeStepper

    local = EpisodeStepper(policy=policy(), task="memory_leak", pool="C", seed=7, policies={})
    remote = EpisodeStepper(policy=policy(), task="memory_leak", pool="C", seed=7, policies={})
    remote.env = RemoteEnv(url)
    try:
        remote.reset()
        local.reset()
        for _ in range(4):
            assert remote.step() == local.step()
        assert repr(remote) == repr(local)
    finally:
        remote.env.close()


# ---- point 1: the server itself


def test_malformed_websocket_messages_get_errors_and_the_session_survives(url):
    local = srelib.IncidentEnv()
    expected = local.reset(task="memory_leak", pool="A", seed=3)[0]
    with connect(url.replace("http", "ws") + "/ws", open_timeout=10) as ws:
        def send(message):
            ws.send(message if isinstance(message, str) else json.dumps(message))
            return json.loads(ws.recv(timeout=30))

        reply = send({"type": "reset", "data": {"task": "memory_leak", "pool": "A", "seed": 3}})
        assert observation_dict(reply["data"]["observation"], reply["data"]["done"]) == expected
        for message, code, words in [
                ("{not json", "INVALID_JSON", "Invalid JSON"),
                ({"type": "launch"}, "UNKNOWN_TYPE", "launch"),
                ({"type": "step", "data": {"action_type": 5}}, "VALIDATION_ERROR", "Invalid"),
                ({"type": "step", "data": {"action_type": "view_alerts", "extra": 1}},
                 "VALIDATION_ERROR", "Invalid"),
                ({"type": "step", "data": {"action_type": "view_alerts", "text": "x"}},
                 "VALIDATION_ERROR", "not both"),
                ({"type": "reset", "data": {"task": "nope"}}, "EXECUTION_ERROR", "valid tasks"),
                ({"type": "reset", "data": {"turbo": True}}, "EXECUTION_ERROR", "valid options")]:
            reply = send(message)
            assert reply["type"] == "error" and reply["data"]["code"] == code, reply
            assert words in json.dumps(reply["data"]), reply
        # the episode is where it was: the next valid step is the in-process first step
        reply = send({"type": "step", "data": {"action_type": "view_alerts"}})
        obs, reward, *_ = local.step({"action_type": "view_alerts"})
        assert observation_dict(reply["data"]["observation"], reply["data"]["done"]) == obs
        assert reply["data"]["reward"] == reward and obs["steps_taken"] == 1
        state = send({"type": "state"})["data"]
        assert state["trajectory"] == local.trajectory and state["seed"] == 3


def open_session(url) -> tuple[str, requests.Session]:
    """A new HTTP session's id and a client that sends its token."""
    opened = requests.post(f"{url}/sessions", timeout=10).json()
    client = requests.Session()
    client.headers["X-Session-Token"] = opened["token"]
    return opened["session_id"], client


def test_http_sessions_are_separate_and_errors_are_clear(url):
    (first, one_client), (second, two_client) = open_session(url), open_session(url)
    try:
        base = f"{url}/sessions"
        got = one_client.post(f"{base}/{first}/step", json={"action": {"action_type": "x"}},
                            timeout=10)
        assert got.status_code == 400 and "send a reset first" in got.json()["detail"]
        one = one_client.post(f"{base}/{first}/reset", json={"task": "memory_leak", "seed": 1},
                            timeout=10).json()
        two = two_client.post(f"{base}/{second}/reset", json={"task": "aliased_fault", "seed": 2},
                            timeout=10).json()
        assert one["observation"]["incident_title"] != two["observation"]["incident_title"]
        for body in ({"action": "view_alerts"}, {"action": {"parameters": []}}, {"act": {}}):
            got = one_client.post(f"{base}/{first}/step", json=body, timeout=10)
            assert got.status_code == 422 and got.json()["detail"], body
        got = one_client.post(f"{base}/{first}/reset", json={"task": "nope"}, timeout=10)
        assert got.status_code == 400 and "valid tasks" in got.json()["detail"]
        # after all that, session one still holds its memory_leak episode; two is untouched
        step = one_client.post(f"{base}/{first}/step", json={"action": {"action_type":
                                                                      "view_alerts"}},
                             timeout=10).json()
        local = srelib.IncidentEnv()
        local.reset(task="memory_leak", seed=1)
        assert observation_dict(step["observation"], step["done"]) == \
            local.step({"action_type": "view_alerts"})[0]
        state = two_client.get(f"{base}/{second}/state", timeout=10).json()
        assert state["task"] == srelib.task_id("aliased_fault") and state["trajectory"] == []
        got = requests.post(f"{base}/no-such-id/step", json={"action": {}}, timeout=10)
        assert got.status_code == 404 and "POST /sessions opens one" in got.json()["detail"]
        got = requests.post(f"{url}/step", json={"action": {"action_type": "view_alerts"}},
                            timeout=10)
        assert got.status_code == 409 and "/sessions" in got.json()["detail"]
    finally:
        for session, client in ((first, one_client), (second, two_client)):
            client.delete(f"{url}/sessions/{session}", timeout=10)
    assert active_sessions(url) == 0


def test_session_cap_is_enforced_and_frees_up():
    with running(max_sessions=2, max_per_client=3) as base:  # the server's cap refuses first
        envs = [RemoteEnv(base), RemoteEnv(base)]
        for env in envs:
            env.reset(task="memory_leak", seed=0)
        with pytest.raises(ConnectionError, match="capacity|full"):
            RemoteEnv(base).reset(task="memory_leak", seed=0)
        got = requests.post(f"{base}/sessions", timeout=10)
        assert got.status_code == 503 and "close a session" in got.json()["detail"]
        envs.pop().close()
        wait_for(lambda: active_sessions(base) == 1, 10, "a closed session frees its slot")
        with RemoteEnv(base) as env:
            assert env.reset(task="memory_leak", seed=0)[1]["seed"] == 0
        envs.pop().close()


def test_idle_sessions_time_out():
    with running(idle_timeout=1) as base:
        session, client = open_session(base)
        env = RemoteEnv(base)
        env.reset(task="memory_leak", seed=4)
        assert active_sessions(base) == 2
        # OpenEnv's reaper looks every max(timeout / 4, 5) s
        wait_for(lambda: active_sessions(base) == 0, 15, "idle sessions are closed")
        got = client.post(f"{base}/sessions/{session}/reset", json={}, timeout=10)
        assert got.status_code == 404 and "idle for more than 1 s" in got.json()["detail"]
        with pytest.raises(RuntimeError, match="session was closed"):
            env.step({"action_type": "view_alerts"})
        # a new episode on the same RemoteEnv opens a fresh session
        assert env.reset(task="memory_leak", seed=4)[1]["seed"] == 4
        env.close()


def test_a_killed_client_frees_its_session():
    client = textwrap.dedent("""
        import sys, time
        from websockets.sync.client import connect
        ws = connect(sys.argv[1] + "/ws")
        ws.send('{"type": "reset", "data": {"task": "memory_leak", "seed": 1}}')
        ws.recv(timeout=30)
        print("ready", flush=True)
        time.sleep(120)
    """)
    with running() as base:
        proc = subprocess.Popen([sys.executable, "-c", client, base.replace("http", "ws")],
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "ready"
            assert active_sessions(base) == 1
            proc.kill()
            proc.wait(timeout=10)
            wait_for(lambda: active_sessions(base) == 0, 10, "the killed client's session ends")
        finally:
            proc.kill()
            proc.wait(timeout=10)


def test_schema_is_generated_from_the_vocabulary_and_openenv_validates_it(url):
    from openenv.cli._validation import validate_running_environment

    schema = requests.get(f"{url}/schema", timeout=10).json()
    catalogue = schema["action"]["x-actions"]
    assert set(catalogue) == {a.value for a in ActionType}
    for action, spec in ACTION_SPECS.items():
        entry = catalogue[action.value]
        assert entry["targeted"] == spec.targeted and entry["phase"] == spec.phase
        assert set(entry["parameters"]["properties"]) == set(spec.params)
        assert entry["parameters"].get("required", []) == \
            [n for n, p in spec.params.items() if p.required]
    assert {"service_statuses", "valid_actions", "bad_commit_sha", "info"} <= \
        set(schema["observation"]["properties"])
    assert {"trajectory", "seed"} <= set(schema["state"]["properties"])
    report = validate_running_environment(url)
    assert report["passed"], report["criteria"]


def test_manifest_names_the_app():
    yaml = pytest.importorskip("yaml")
    manifest = yaml.safe_load((ROOT / "openenv.yaml").read_text())
    assert manifest["runtime"] == "fastapi" and manifest["app"] == "srelib.serve.server:app"
    module, attribute = manifest["app"].split(":")
    app = getattr(__import__(module, fromlist=[attribute]), attribute)
    assert any(getattr(route, "path", None) == "/ws" for route in app.routes)


def test_cli_serves_on_loopback_only():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "srelib", "serve", "--port", str(port),
                             "--max-sessions", "3"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        def up():
            try:
                return requests.get(f"http://127.0.0.1:{port}/health", timeout=2).ok
            except requests.ConnectionError:
                assert proc.poll() is None, proc.stderr.read()
                return False

        wait_for(up, 120, "srelib serve answers /health")
        assert requests.get(f"http://127.0.0.1:{port}/sessions", timeout=10).json() == \
            {"active_sessions": 0, "max_sessions": 3, "max_per_client": 1, "idle_timeout_s": 300}
        with pytest.raises(requests.ConnectionError):  # another loopback address: not bound
            requests.get(f"http://127.0.0.2:{port}/health", timeout=5)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.bench_script
def test_serve_bench_runs_end_to_end(tmp_path):
    out = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_serve.py"), "--seconds",
                           "1", "--soak-seconds", "3", "--seeds", "1", "--sweep-seeds", "1",
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=280)
    assert done.returncode == 0, done.stderr
    rows = {row["metric"]: row for row in json.loads(out.read_text())}
    assert rows["server episodes/s, 16 sessions"]["value"] > 0
    soak = rows["soak: episodes in 3s at 16 sessions"]
    assert soak["met"] is True and soak["value"] > 0, soak
    assert rows["evaluate Dask LocalCluster(2) episodes/s"]["met"] is True


@pytest.mark.bench_script
def test_the_bench_server_keeps_serving_when_its_log_outgrows_a_pipe():
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_serve import ServerProcess

    server = ServerProcess(max_sessions=4)
    try:
        for _ in range(1500):  # ~80 bytes of log each on stderr: past a 64 kB pipe
            with _ws(server.url):
                pass
        assert requests.get(f"{server.url}/health", timeout=10).ok
        wait_for(lambda: any("WebSocket /ws" in line for line in server.log), 10, "the log is read")
    finally:
        server.close()
    assert len(server.log) == ServerProcess.LOG_LINES


def test_without_openenv_the_error_names_the_extra():
    code = ("import sys; sys.modules['openenv'] = None\n"
            "try:\n    import srelib.serve.remote\nexcept ModuleNotFoundError as exc:\n"
            "    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert "pip install 'srelib[serve]'" in done.stdout, done.stderr


# ---- hostile clients: bad frames, foreign sessions, coerced integers


def _ws(url, query: str = ""):
    return connect(url.replace("http", "ws") + "/ws" + query, open_timeout=10)


BAD_FRAMES = [("null", "a JSON object"), ("[1, 2]", "a JSON object"), ('"reset"', "a JSON object"),
              ("7", "a JSON object"), (b"\x00\x01binary", "binary"), ("[" * 10_000 + "]" * 10_000, "nested"),
              ('{"type": "reset", "data": {"seed": ' + "9" * 5000 + "}}", "Invalid JSON"),
              ('{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}', "/mcp"),
              ('{"type": ["step"]}', "Unknown message type"), ("x" * (2 << 20), "at most")]


def test_bad_frames_get_error_replies_and_the_session_goes_on(url):
    local = srelib.IncidentEnv()
    local.reset(task="memory_leak", pool="A", seed=5)
    with _ws(url) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"task": "memory_leak", "pool": "A", "seed": 5}}))
        ws.recv(timeout=30)
        for frame, words in BAD_FRAMES:
            ws.send(frame)
            reply = json.loads(ws.recv(timeout=30))
            assert reply["type"] == "error" and words in reply["data"]["message"], (frame[:40], reply)
        ws.send(json.dumps({"type": "step", "data": {"action_type": "view_alerts"}}))
        reply = json.loads(ws.recv(timeout=30))
        assert observation_dict(reply["data"]["observation"], reply["data"]["done"]) == \
            local.step({"action_type": "view_alerts"})[0]


def test_a_session_belongs_to_its_opener(url):
    session, owner = open_session(url)
    try:
        owner.post(f"{url}/sessions/{session}/reset", json={"task": "memory_leak", "seed": 1}, timeout=10)
        stranger = requests.Session()
        stranger.headers["X-Session-Token"] = "guessed"
        for client in (requests, stranger):
            assert client.get(f"{url}/sessions/{session}/state", timeout=10).status_code == 404
            assert client.post(f"{url}/sessions/{session}/step", timeout=10,
                               json={"action": {"action_type": "view_alerts"}}).status_code == 404
            assert client.delete(f"{url}/sessions/{session}", timeout=10).status_code == 404
            close = client.post(f"{url}/mcp", timeout=10, json={
                "jsonrpc": "2.0", "id": 1, "method": "openenv/session/close",
                "params": {"session_id": session}})
            assert close.status_code == 404 and close.json()["error"]["message"] == "no such session"
        with pytest.raises(Exception, match="403"):  # refused at the handshake
            with _ws(url, f"?session_id={session}&token=guessed") as ws:
                ws.send(json.dumps({"type": "state"}))
                ws.recv(timeout=10)
        with _ws(url, f"?session_id={session}&token={owner.headers['X-Session-Token']}") as ws:
            ws.send(json.dumps({"type": "state"}))
            assert json.loads(ws.recv(timeout=10))["data"]["task"] == srelib.task_id("memory_leak")
        state = owner.get(f"{url}/sessions/{session}/state", timeout=10).json()
        assert state["task"] == srelib.task_id("memory_leak") and state["trajectory"] == []
    finally:
        assert owner.delete(f"{url}/sessions/{session}", timeout=10).status_code == 200


@pytest.mark.parametrize("seed", [True, "7", 7.0, [7]])
def test_integers_are_integers_on_every_route(url, seed):
    got = requests.post(f"{url}/reset", json={"task": "memory_leak", "seed": seed}, timeout=10)
    assert got.status_code == 422, got.text
    session, client = open_session(url)
    try:
        got = client.post(f"{url}/sessions/{session}/reset", json={"seed": seed}, timeout=10)
        assert got.status_code == 422, got.text
    finally:
        client.delete(f"{url}/sessions/{session}", timeout=10)
    with _ws(url) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"task": "memory_leak", "seed": seed}}))
        reply = json.loads(ws.recv(timeout=30))
        assert reply["type"] == "error" and reply["data"]["code"] == "VALIDATION_ERROR", reply


def _json_values():
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)


def _messages():
    """WebSocket messages: any JSON, objects of a known type with any data, and raw text."""
    from hypothesis import strategies as st

    typed = st.fixed_dictionaries({"type": st.sampled_from(["reset", "step", "state"]),
                                   "data": _json_values()})
    return (_json_values().map(json.dumps) | typed.map(json.dumps) | st.text(max_size=40)
            | st.binary(max_size=40))


def test_fuzzed_websocket_http_and_mcp_messages_get_well_formed_replies(url):
    """Whatever a client sends, each reply is a well-formed JSON message, the WebSocket session
    survives, and HTTP answers below 500."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    session, client = open_session(url)
    with _ws(url) as ws:
        @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
        @given(message=_messages(), body=_json_values(),
               route=st.sampled_from(["/reset", "/step", "/mcp", f"/sessions/{session}/reset",
                                      f"/sessions/{session}/step"]))
        def exchange(message, body, route):
            ws.send(message)
            reply = json.loads(ws.recv(timeout=30))
            assert isinstance(reply, dict) and reply["type"] in ("error", "observation", "state")
            got = client.post(f"{url}{route}", json=body, timeout=10)
            assert got.status_code < 500 and isinstance(got.json(), dict), (route, body, got.text)

        exchange()
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv(timeout=30))["type"] == "state"
    assert requests.get(f"{url}/health", timeout=10).status_code == 200
    assert client.delete(f"{url}/sessions/{session}", timeout=10).status_code == 200


def test_one_client_holds_at_most_its_share_of_sessions():
    with running(max_sessions=4, max_per_client=2) as base:
        first, client = open_session(base)
        with _ws(base) as ws:
            with pytest.raises(Exception, match="403"):
                _ws(base).close()
            got = requests.post(f"{base}/sessions", timeout=10)
            assert got.status_code == 429 and "close one first" in got.json()["detail"]
            ws.send(json.dumps({"type": "state"}))
            assert json.loads(ws.recv(timeout=10))["type"] == "state"
        client.delete(f"{base}/sessions/{first}", timeout=10)
        wait_for(lambda: active_sessions(base) == 0, 10, "closed sessions free the client's share")
        with _ws(base), _ws(base):
            assert active_sessions(base) == 2


def test_by_default_one_client_holds_a_quarter_of_the_sessions():
    import http.client

    with running(max_sessions=8, forwarded_allow_ips="127.0.0.1") as base:  # a trusted proxy
        assert requests.get(f"{base}/sessions", timeout=10).json()["max_per_client"] == 2
        held = [open_session(base) for _ in range(2)]
        got = requests.post(f"{base}/sessions", timeout=10)
        assert got.status_code == 429 and "holds 2 sessions" in got.json()["detail"]
        with pytest.raises(Exception, match="403"):
            _ws(base).close()
        same = http.client.HTTPConnection("127.0.0.1", int(base.rsplit(":", 1)[1]), timeout=10,
                                          source_address=("127.0.0.2", 0))
        same.request("POST", "/sessions")
        assert same.getresponse().status == 429, "another loopback address is the same host"
        other = requests.post(f"{base}/sessions", headers={"X-Forwarded-For": "192.0.2.7"},
                              timeout=10)
        assert other.status_code == 201, "another client (behind the proxy) still gets a slot"
        assert active_sessions(base) == 3
        for session, client in held:
            client.delete(f"{base}/sessions/{session}", timeout=10)


class NoSessions:
    """A stand-in for the server's session registry, in which no session is open: the guard's
    bookkeeping of WebSocket slots runs without a server."""

    @staticmethod
    def live(_session_id) -> bool:
        return False


def test_the_guard_forgets_hosts_whose_websockets_closed():
    from srelib.serve.guard import Guard
    from srelib.serve.owners import Clients

    async def play(_scope, receive, send):  # one host connected at a time
        assert list(guard.clients.reserved.values()) == [1]
        await receive()  # the client is gone: its slot is free before the session is torn down
        assert not guard.clients.reserved

    async def nothing():
        return {"type": "websocket.disconnect"}

    async def ignore(message):
        pass

    async def connect_all():
        for k in range(1000):
            scope = {"type": "websocket", "path": "/ws", "client": (f"10.0.{k // 250}.{k % 250}", 1)}
            await guard(scope, nothing, ignore)

    guard = Guard(None, Clients(2, NoSessions()), play=play)
    asyncio.run(connect_all())
    assert not guard.clients.reserved


def test_slow_and_silent_connections_are_dropped_after_the_read_timeout():
    import socket

    with running(read_timeout=1) as base:
        port = int(base.rsplit(":", 1)[1])
        conns = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
        conns[1].sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        conns[2].sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        started = time.monotonic()
        for conn in conns:
            assert conn.recv(1024) == b"", "the server closes the connection"
            conn.close()
        assert time.monotonic() - started < 5
        assert requests.get(f"{base}/health", timeout=10).status_code == 200


def test_a_client_far_ahead_of_a_busy_session_is_read_only_up_to_a_character_budget(monkeypatch):
    """While a session's reset takes its time, a client that keeps sending large messages is
    read only until the queued ones hold ``MAX_AHEAD_CHARS`` characters (and what one read
    brought past them: the message that crossed the budget, and any after it in the same
    chunk of at most 256 KiB), not up to ``MAX_AHEAD`` messages of any size; then every
    message is answered, in order."""
    import threading

    from srelib.serve import scheduling
    from srelib.serve import server as server_module
    from srelib.serve import ws as ws_module

    budget = 200_000
    monkeypatch.setattr(ws_module, "MAX_AHEAD_CHARS", budget)
    monkeypatch.setattr(scheduling, "_STARTED", set())  # a first reset: on a worker thread
    peak, put = [0], ws_module._MeasuredQueue._put

    def measured(queue, item):
        put(queue, item)
        peak[0] = max(peak[0], queue.size)

    release, reset = threading.Event(), server_module.SreEnvironment._reset

    def held(env, **options):  # a reset that takes its time, as a task's first build may
        release.wait(30)
        return reset(env, **options)

    monkeypatch.setattr(ws_module._MeasuredQueue, "_put", measured)
    monkeypatch.setattr(server_module.SreEnvironment, "_reset", held)
    large = json.dumps({"type": "step", "data": {"action_type": "view_alerts",
                                                 "parameters": {"pad": "x" * 100_000}}})
    try:
        with running() as url, connect(url.replace("http", "ws") + "/ws", open_timeout=10) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"task": "memory_leak", "pool": "A",
                                                          "seed": 1}}))
            for _ in range(12):
                ws.send(large)
            time.sleep(1.0)  # time to read whatever the server would read
            release.set()
            replies = [json.loads(ws.recv(timeout=60)) for _ in range(13)]
    finally:
        release.set()
    assert len(large) < peak[0] <= budget + len(large) + 256 * 1024  # 12 are 1.2 MB
    assert [reply["type"] for reply in replies] == ["observation"] * 13
    assert [reply["data"]["observation"]["steps_taken"] for reply in replies] == list(range(13))

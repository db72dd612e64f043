"""HFTransformersChatPolicy end to end on the tiny offline Gemma-architecture model."""

import json
from pathlib import Path

import pytest

from srelib.env.actions import ACTION_NAMES, GIVE_UP, PARSE_ERROR
from srelib.policies.llm import kv_cache
from srelib.policies.llm.providers.hf_chat import (HFTransformersChatPolicy, fold_system,
                                     model_access_problem, quantization_config, resolve_dtype)
from srelib.policies.llm.prompts import SYSTEM_PROMPT
from srelib.training.tiny_model import TINY_PROMPT_LIMITS, tiny_chat_model


@pytest.fixture(scope="session")
def tiny_path(tmp_path_factory):
    return tiny_chat_model(tmp_path_factory.getbasetemp() / "tiny_chat_model")


@pytest.fixture(scope="module")
def greedy(tiny_path):
    return HFTransformersChatPolicy(tiny_path, temperature=0, max_new_tokens=32, load_in_4bit=False,
                                    **TINY_PROMPT_LIMITS)


def observation(step, phase=1, message="", valid=("view_alerts", "check_metrics:orders")):
    return {"incident_title": "Checkout failures", "incident_summary": "orders is failing",
            "severity": "SEV2", "current_phase": phase, "steps_taken": step, "max_steps": 30,
            "steps_remaining": 30 - step, "action_message": message, "action_success": True,
            "action_result": {"note": message}, "service_statuses": {"orders": "degraded"},
            "valid_actions": list(valid)}


def test_tiny_model_is_small_gemma_and_cached(tiny_path):
    from transformers import AutoConfig

    files = list(Path(tiny_path).iterdir())
    assert sum(f.stat().st_size for f in files) < 1_000_000
    config = AutoConfig.from_pretrained(tiny_path)
    assert config.architectures == ["Gemma3ForCausalLM"] and config.head_dim == 32
    stamp = (Path(tiny_path) / "model.safetensors").stat().st_mtime_ns
    assert tiny_chat_model(tiny_path) == tiny_path
    assert (Path(tiny_path) / "model.safetensors").stat().st_mtime_ns == stamp


def test_a_tiny_model_asked_for_elsewhere_is_a_copy_of_the_one_build(tiny_path, tmp_path):
    from srelib.training.tiny_model import default_model_dir

    again = Path(tiny_chat_model(tmp_path / "elsewhere"))
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        built = (default_model_dir() / name).read_bytes()
        assert (again / name).read_bytes() == built == (Path(tiny_path) / name).read_bytes()


def test_template_rejects_system_role_and_policy_folds_it(greedy):
    from jinja2 import TemplateError

    with pytest.raises(TemplateError, match="System role not supported"):
        greedy.tokenizer.apply_chat_template(
            [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], tokenize=False)
    prompt = greedy.chat_prompt([{"role": "system", "content": "RULES"},
                                 {"role": "user", "content": "HELLO"}])
    assert greedy.folds_system is True
    assert prompt.startswith("<bos><start_of_turn>user\nRULES\n\nHELLO<end_of_turn>\n")
    assert prompt.endswith("<start_of_turn>model\n")
    assert "system" not in prompt


def test_fold_system_keeps_alternation():
    folded = fold_system([{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
                          {"role": "assistant", "content": "A"}, {"role": "user", "content": "V"}])
    assert [m["role"] for m in folded] == ["user", "assistant", "user"]
    assert folded[0]["content"] == "S\n\nU"


def test_batched_and_sequential_greedy_replies_are_identical(greedy):
    conversations = [[{"role": "system", "content": SYSTEM_PROMPT[:200]},
                      {"role": "user", "content": text}]
                     for text in ("orders is down", "Phase 2: read the code, then propose a patch",
                                  "x", "Valid actions: view_alerts, query_logs:orders")]
    prompts = [greedy.chat_prompt(c) for c in conversations]
    batched = greedy.generate(prompts)
    sequential = [greedy.generate([p])[0] for p in prompts]
    assert batched == sequential
    assert len(set(batched)) > 1  # the prompts really differ in what they produce
    assert greedy.generate(prompts) == batched  # greedy is deterministic


def test_act_batch_matches_separate_episodes(tiny_path, greedy):
    lanes = [observation(0), observation(0, message="orders memory at 91%"),
             observation(3, phase=2, valid=("list_dir", "read_file", "propose_patch"))]
    greedy.reset(seed=1)
    batched = greedy.act_batch([(o, o["current_phase"], "memory_leak", i) for i, o in enumerate(lanes)])
    singles = []
    for o in lanes:
        one = HFTransformersChatPolicy(tiny_path, temperature=0, max_new_tokens=32,
                                       load_in_4bit=False, **TINY_PROMPT_LIMITS)
        singles.append(one(o, o["current_phase"], "memory_leak"))
    assert batched == singles
    for action in batched:
        assert action["action_type"] in ACTION_NAMES + (PARSE_ERROR,)
    assert len(greedy.usage) >= 3 and all(u["completion_tokens"] > 0 for u in greedy.usage)


def test_unparsable_replies_become_feedback_then_give_up(tiny_path):
    policy = HFTransformersChatPolicy(tiny_path, temperature=0, max_new_tokens=8,
                                      load_in_4bit=False, max_failures=2)
    # Nothing the model writes is valid when the only valid action is one it never learnt.
    valid = ("scale_service:cache",)
    first = policy(observation(0, valid=valid), 1, "memory_leak")
    second = policy(observation(1, message=first["parameters"]["reason"], valid=valid), 1,
                    "memory_leak")
    assert first["action_type"] == PARSE_ERROR and first["parameters"]["reason"]
    assert second["action_type"] == GIVE_UP
    assert policy.parse_failures == 2
    # The model saw its failure explained on its second turn.
    messages = policy.conversation()
    assert messages[-1]["role"] == "assistant"
    assert first["parameters"]["reason"][:40] in messages[-2]["content"]


def test_4bit_request_falls_back_on_cpu_with_a_message(tiny_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("the fallback is for machines without CUDA")
    policy = HFTransformersChatPolicy(tiny_path, load_in_4bit=True)
    assert "4-bit loading needs CUDA" in capsys.readouterr().out
    assert policy.model.dtype == torch.float32
    assert getattr(policy.model.config, "quantization_config", None) is None


def test_dtype_rules():
    import torch

    assert resolve_dtype("float32") == torch.float32
    if not torch.cuda.is_available():
        assert resolve_dtype("auto") == torch.float32
        assert resolve_dtype("bfloat16") == torch.bfloat16  # asked for, on a CPU
    for bad in ("float16", torch.float16, "int8"):
        with pytest.raises(ValueError, match="auto"):
            resolve_dtype(bad)


@pytest.fixture
def fake_gpu(monkeypatch):
    """Fakes a CUDA device of a given compute capability (no GPU here): monkeypatches
    ``torch.cuda.is_available`` and ``torch.cuda.get_device_capability``, and makes
    ``is_bf16_supported`` say True as torch does on a T4 (it counts emulation)."""
    import torch

    def fake(capability):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: capability)
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)

    return fake


@pytest.mark.parametrize("capability, expected", [((7, 5), "float32"), ((8, 0), "bfloat16"),
                                                  ((9, 0), "bfloat16")])
def test_auto_dtype_and_4bit_compute_dtype_follow_native_bf16(fake_gpu, capability, expected):
    import torch

    fake_gpu(capability)
    dtype = resolve_dtype("auto")
    assert dtype == getattr(torch, expected)
    assert quantization_config(True, dtype).bnb_4bit_compute_dtype == dtype


def test_explicit_bf16_on_a_t4_is_refused(fake_gpu):
    fake_gpu((7, 5))
    with pytest.raises(ValueError, match=r"7\.5\) has no native bf16.*'auto' or 'float32'"):
        resolve_dtype("bfloat16")


def test_preloaded_model_and_tokenizer_are_used(tiny_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_path)
    tokenizer = AutoTokenizer.from_pretrained(tiny_path)
    policy = HFTransformersChatPolicy(model=model, tokenizer=tokenizer, temperature=0,
                                      max_new_tokens=4)
    assert policy.model is model and policy.tokenizer is tokenizer
    with pytest.raises(ValueError, match="model_id_or_path"):
        HFTransformersChatPolicy()


def test_sampling_is_reproducible_per_seed(tiny_path):
    policy = HFTransformersChatPolicy(tiny_path, temperature=1.0, max_new_tokens=16,
                                      load_in_4bit=False)
    prompt = [policy.chat_prompt([{"role": "user", "content": "orders is down"}])]

    def draw(seed):
        policy.reset(seed=seed)
        return policy.generate(prompt * 3)

    assert draw(5) == draw(5)
    assert json.dumps(draw(5)) != json.dumps(draw(6))


def _episode_lockstep(policy, seeds):
    import srelib

    envs = [srelib.IncidentEnv() for _ in seeds]
    obs = [env.reset(task="memory_leak", pool="C", seed=s)[0] for env, s in zip(envs, seeds)]
    policy.reset_batch([(s, "memory_leak") for s in seeds])
    running = list(range(len(seeds)))
    while running:
        actions = policy.act_batch([(obs[i], obs[i]["current_phase"], "memory_leak", i)
                                    for i in running])
        for i, action in zip(list(running), actions):
            obs[i], _, terminated, truncated, _ = envs[i].step(action)
            if terminated or truncated:
                running.remove(i)
    return [env.trajectory for env in envs]


def test_lockstep_episodes_equal_episodes_run_one_by_one(tiny_path):
    def make():
        return HFTransformersChatPolicy(tiny_path, temperature=0, max_new_tokens=16,
                                        load_in_4bit=False, max_failures=2, **TINY_PROMPT_LIMITS)

    seeds = [0, 1, 2]
    together = _episode_lockstep(make(), seeds)
    alone = [_episode_lockstep(make(), [s])[0] for s in seeds]
    assert together == alone
    assert all(t[-1]["action"]["action_type"] in (GIVE_UP,) + ACTION_NAMES for t in together)


def test_importing_the_policies_loads_no_heavy_library():
    import subprocess
    import sys

    code = ("import sys, srelib, srelib.policies as p; "
            "p.OpenAIChatPolicy, p.HFTransformersChatPolicy, p.HeuristicPhase1Policy; "
            "print(sorted(m for m in ('torch', 'transformers', 'openai') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _run_lanes(policy, seeds, steps, task="memory_leak"):
    """``steps`` lockstep turns of real episodes; each lane's records and conversation."""
    import srelib

    envs = [srelib.IncidentEnv() for _ in seeds]
    obs = [env.reset(task=task, pool="C", seed=s)[0] for env, s in zip(envs, seeds)]
    policy.reset_batch([(s, task) for s in seeds])
    records = {i: [] for i in range(len(seeds))}
    for _ in range(steps):
        running = [i for i, o in enumerate(obs) if not o["done"]]
        mark = len(policy.usage)
        actions = policy.act_batch([(obs[i], obs[i]["current_phase"], task, i) for i in running])
        for record in policy.usage[mark:]:
            records[running[record["item"]]].append(record)
        for i, action in zip(running, actions):
            obs[i] = envs[i].step(action)[0]
    return records, [policy.conversation(i) for i in range(len(seeds))]


def _small(tiny_path, **options):
    settings = dict(temperature=0, max_new_tokens=16, load_in_4bit=False, max_failures=9,
                    obs_chars=600, max_history=3)
    return HFTransformersChatPolicy(tiny_path, **{**settings, **options})


def test_kv_cached_replies_equal_uncached_ones_token_for_token(tiny_path):
    seeds = [0, 1, 2]
    cached_records, cached = _run_lanes(_small(tiny_path), seeds, 4)
    plain_records, plain = _run_lanes(_small(tiny_path, kv_cache=False), seeds, 4)
    assert cached == plain  # every prompt and every reply, in every lane
    for lane in cached_records:
        assert ([r["completion_tokens"] for r in cached_records[lane]]
                == [r["completion_tokens"] for r in plain_records[lane]])
        assert all(r["cached_tokens"] == 0 for r in plain_records[lane])
        # Cached turns prefill much less than the whole prompt.
        later = cached_records[lane][1:]
        assert sum(r["prefill_tokens"] for r in later) < sum(r["prompt_tokens"] for r in later) / 3


def test_lanes_prefill_only_the_new_turn_and_share_the_system_prefix(tiny_path):
    policy = _small(tiny_path, max_history=8)
    records, conversations = _run_lanes(policy, [0, 1, 2], 3)
    shared = len(policy._prefixes.shared)
    room = policy.model.config.max_position_embeddings - policy.max_new_tokens
    assert shared > 100  # the system prompt, encoded once ...
    for lane, (first, second, third) in records.items():
        # ... and reused by every new lane (a bucket re-encodes a few cached tokens so that its
        # rows prefill the same width: as many as the lanes' new turns differ in length)
        assert first["cached_tokens"] >= shared - 8
        # Appending a turn: everything of the last call (prompt + reply) is reused.
        assert second["cached_tokens"] >= first["prompt_tokens"]
        # The third turn would pass the model's positions: its oldest exchange goes, the prompt
        # fits, and only what comes before the cut is reused.
        assert third["prompt_tokens"] <= room < second["prompt_tokens"] + second["completion_tokens"] + 100
        assert shared <= third["cached_tokens"] < second["prompt_tokens"]
        for record in (first, second, third):
            assert record["prefill_tokens"] == record["prompt_tokens"] - record["cached_tokens"]
    encoded_once = policy._prefixes.shared
    _run_lanes(policy, [3], 1)  # a new group of episodes reuses it too
    assert policy._prefixes.shared is encoded_once


def test_trimmed_history_invalidates_the_cache_past_the_cut(tiny_path):
    import srelib

    policy = _small(tiny_path, max_history=1)
    env = srelib.IncidentEnv()
    obs = env.reset(task="memory_leak", pool="C", seed=4)[0]
    policy.reset(seed=4)
    prompts, steps = [], []
    for _ in range(3):
        action = policy(obs, obs["current_phase"], "memory_leak")
        steps.append(policy.usage[-1])
        prompts.append(policy.chat_prompt(policy.conversation()[:-1]))
        obs = env.step(action)[0]
    # Step 2 only appends, so all of step 1's prompt is reused.
    assert prompts[1].startswith(prompts[0][:-len("<start_of_turn>model\n")])
    assert steps[1]["cached_tokens"] >= steps[0]["prompt_tokens"]
    # Step 3 drops the oldest (reply, observation) pair: the transcript is rewritten after the
    # incident turn, so the cache is cut back there and the rest is encoded anew.
    assert not prompts[2].startswith(prompts[1][:-len("<start_of_turn>model\n")])
    assert len(policy._prefixes.shared) - 2 <= steps[2]["cached_tokens"]
    assert steps[2]["cached_tokens"] < steps[1]["prompt_tokens"] - 100
    assert steps[2]["prefill_tokens"] == steps[2]["prompt_tokens"] - steps[2]["cached_tokens"]
    plain = _small(tiny_path, max_history=1, kv_cache=False)
    _, cached = _run_lanes(policy, [4, 5], 4)
    _, uncached = _run_lanes(plain, [4, 5], 4)
    assert cached == uncached


def test_buckets_keep_a_long_reencode_apart_and_respect_the_batch_size():
    import torch

    def row(item, length, reuse):
        return kv_cache.Row(item, torch.zeros(length, dtype=torch.long), None, reuse)

    rows = [row(0, 1000, 900), row(1, 1100, 980), row(2, 1200, 100), row(3, 1000, 890)]
    groups = kv_cache.buckets(rows, max_rows=8)
    assert [[r.item for r in g] for g in groups] == [[0, 3, 1], [2]]
    assert [len(g) for g in kv_cache.buckets(rows[:2] + rows[3:], max_rows=2)] == [2, 1]
    past, width, pasts = kv_cache.plan_rows(groups[0])
    # Every row prefills 120 tokens: rows 0 and 3 re-encode a few they have cached.
    assert width == 120 and pasts == [880, 880, 980] and past == 980


@pytest.fixture
def hub():
    """A real HTTP server on loopback answering the hub's auth-check route the way the hub does
    (no hub is reachable here): ``org/open`` is readable, ``org/gated`` has a licence not yet
    accepted (403, GatedRepo), anything else is missing (401, RepoNotFound), and a request
    with the token ``bad`` is refused as invalid."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            auth = self.headers.get("Authorization", "")
            if auth == "Bearer bad":
                status, code, message = 401, None, "Invalid credentials in Authorization header"
            elif self.path == "/api/models/org/open/auth-check":
                status, code, message = 200, None, None
            elif self.path == "/api/models/org/gated/auth-check" and auth:
                status, code, message = 403, "GatedRepo", "Access to model org/gated is restricted"
            else:
                status, code, message = 401, "RepoNotFound", "Repository not found"
            self.send_response(status)
            for name, value in (("X-Error-Code", code), ("X-Error-Message", message)):
                if value:
                    self.send_header(name, value)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_gated_model_access_is_checked_before_loading(hub, tiny_path, monkeypatch):
    from huggingface_hub import constants

    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", "/nonexistent/token")  # no saved login
    assert model_access_problem(tiny_path) is None  # a local folder needs no hub
    assert model_access_problem("org/open", endpoint=hub) is None
    gated = model_access_problem("org/gated", token="hf_user", endpoint=hub)
    assert "accept the licence" in gated and "https://huggingface.co/org/gated" in gated
    no_token = model_access_problem("org/gated", endpoint=hub)
    assert no_token.startswith("No Hugging Face token found") and "HF_TOKEN" in no_token
    assert "not found" in model_access_problem("org/typo", token="hf_user", endpoint=hub)
    assert "rejected this Hugging Face token" in model_access_problem(
        "org/open", token="bad", endpoint=hub)
    from srelib.training.tiny_model import free_port

    offline = model_access_problem("org/open", endpoint=f"http://127.0.0.1:{free_port()}")
    assert offline.startswith("Could not reach the Hugging Face hub")


def test_tools_need_a_template_that_renders_them(tiny_path, caplog):
    plain = HFTransformersChatPolicy(tiny_path, temperature=0, max_new_tokens=8,
                                     load_in_4bit=False, tools=True, **TINY_PROMPT_LIMITS)
    assert plain.tools is False and "cannot render tools" in caplog.text
    assert plain(observation(0), 1, "memory_leak")["action_type"] in (*ACTION_NAMES, PARSE_ERROR)


def test_tools_are_rendered_and_tool_calls_read(tiny_path):
    from transformers import AutoTokenizer

    from srelib.training.chat_format import use_tool_format

    tokenizer = use_tool_format(AutoTokenizer.from_pretrained(tiny_path))
    policy = HFTransformersChatPolicy(tiny_path, tokenizer=tokenizer, temperature=0,
                                      max_new_tokens=8, load_in_4bit=False, tools=True,
                                      **TINY_PROMPT_LIMITS)
    assert policy.tools is True
    prompt = policy.chat_prompt([{"role": "system", "content": "RULES"},
                                 {"role": "user", "content": "HELLO"}])
    assert "propose_patch(diff): " in prompt
    call = ('<tool_call>{"name": "query_logs", "arguments": {"target_service": "orders", '
            '"limit": 5}}</tool_call>')
    assert json.loads(policy.read_tool_call(prompt, call)) == {
        "action_type": "query_logs", "target_service": "orders", "parameters": {"limit": 5}}
    assert isinstance(policy.read_tool_call(prompt, '<tool_call>{"name": "nope"}</tool_call>'),
                      ValueError)
    assert policy.read_tool_call(prompt, '{"action_type": "view_alerts"}') == \
        '{"action_type": "view_alerts"}'  # no tool call: the text parser reads it
    action = policy(observation(0), 1, "memory_leak")  # the tiny model answers in text
    assert action["action_type"] in (*ACTION_NAMES, PARSE_ERROR)

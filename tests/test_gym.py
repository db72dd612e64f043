"""The Gymnasium adapter: Gymnasium's own checker, make by id, and the same episodes as IncidentEnv."""

from __future__ import annotations

import json

import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

import srelib  # noqa: E402
from srelib import IncidentEnv, scripted_policy  # noqa: E402
from srelib.integrations.gym import ENV_ID, IncidentGymEnv  # noqa: E402

MADE_ID = f"srelib.integrations.gym:{ENV_ID}"


def test_gymnasium_env_checker_passes():
    env = gymnasium.make(MADE_ID, pool="C")
    check_env(env.unwrapped, skip_render_check=True)


def test_an_episode_through_make_matches_incident_env():
    policy = scripted_policy("heuristic-revert")()
    policy.reset()
    env = gymnasium.make(MADE_ID, pool="C")  # the checker and order wrappers stay on
    direct = IncidentEnv()
    text, info = env.reset(seed=5, options={"task": "memory_leak"})
    obs, direct_info = direct.reset(task="memory_leak", pool="C", seed=5)
    assert json.loads(text) == obs and info == direct_info
    done, steps = False, 0
    while not done:
        action = json.dumps(policy(obs, obs["current_phase"], "memory_leak"))
        assert env.action_space.contains(action)
        text, reward, terminated, truncated, info = env.step(action)
        obs, direct_reward, *ends, direct_info = direct.step(json.loads(action))
        assert env.observation_space.contains(text)
        assert (json.loads(text), reward, [terminated, truncated]) == (obs, direct_reward, ends)
        done, steps = terminated or truncated, steps + 1
    assert steps > 3 and obs["current_phase"] == 2
    assert info["score"] == direct_info["score"] and info["ended_by"] == "propose_patch"


def _seeds(env, first_seed, resets):
    seeds = [env.reset(seed=first_seed)[1]["seed"]]
    return seeds + [env.reset()[1]["seed"] for _ in range(resets)]


def test_an_unseeded_reset_continues_the_seeded_rng():
    env = IncidentGymEnv(task="memory_leak", pool="A")
    seeds = _seeds(env, 11, 3)
    assert seeds == _seeds(IncidentGymEnv(task="memory_leak", pool="A"), 11, 3)
    assert seeds[0] == 11 and len(set(seeds)) == 4
    rng, _ = gymnasium.utils.seeding.np_random(11)
    assert seeds[1] == int(rng.integers(2**63 - 1))
    env.reset(seed=11)
    text, info = env.reset()
    obs, _ = IncidentEnv().reset(task="memory_leak", pool="A", seed=info["seed"])
    assert json.loads(text) == obs


def test_options_choose_task_pool_and_mode_and_bad_ones_raise():
    env = IncidentGymEnv(task="memory_leak", pool="A")
    _, info = env.reset(seed=0, options={"pool": "B"})
    assert (info["task"], info["pool"], info["mode"], info["phase"]) == \
        (srelib.task_id("memory_leak"), "B", "p2_only", 2)
    _, info = env.reset(seed=0, options={"pool": None, "mode": "joint"})
    assert (info["mode"], info["phase"]) == ("joint", 1)
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"tasks": "memory_leak"})
    with pytest.raises(ValueError, match="valid"):
        env.reset(options={"task": "no_such_task"})


def test_a_text_outside_the_vocabulary_is_an_invalid_step():
    env = IncidentGymEnv(pool="C")
    env.reset(seed=1)
    text, reward, terminated, truncated, info = env.step("restart everything")
    assert info["valid"] is False and reward < 0 and not (terminated or truncated)
    assert json.loads(text)["action_result"]["valid_actions_hint"]


def test_srelib_stays_light_and_a_missing_gymnasium_names_the_extra():
    import subprocess
    import sys

    code = ("import sys, srelib; assert 'gymnasium' not in sys.modules\n"
            "sys.modules['gymnasium'] = None\n"
            "try:\n    import srelib.integrations.gym\n"
            "except ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "pip install 'srelib[gym]'" in out.stdout

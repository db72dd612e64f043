"""The action parser over realistic model replies, good and broken."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srelib import parse_action
from srelib.env.actions import ACTION_NAMES, GIVE_UP, PARSE_ERROR, SERVICES
from srelib.parse import _parse_action_json, give_up_action, parse_error_action

PHASE1 = (["view_alerts"]
          + [f"{a}:{s}" for a in ("query_logs", "check_metrics", "check_dependencies",
                                  "check_deploy_history", "run_health_check", "restart_service")
             for s in SERVICES]
          + ["rollback_deploy:orders", "scale_service:orders", "declare_root_cause",
             "transition_to_phase2"])
PHASE2 = ["declare_no_change", "get_file_diff", "get_git_log", "list_dir", "propose_patch",
          "read_file", "search_code"]


def act(action_type, target=None, **params):
    return {"action_type": action_type, "target_service": target, "parameters": params}


GOOD = [
    # plain JSON
    ('{"action_type": "view_alerts", "target_service": null, "parameters": {}}', PHASE1,
     act("view_alerts")),
    # fenced, with a language tag and prose around it
    ('I will check the alerts first.\n```json\n{"action_type": "view_alerts"}\n```\nDone.',
     PHASE1, act("view_alerts")),
    # fence without a language tag
    ('```\n{"action_type": "check_metrics", "target_service": "orders"}\n```', PHASE1,
     act("check_metrics", "orders")),
    # prose before and after, braces inside strings
    ('Let me search. {"action_type": "query_logs", "target_service": "orders", "parameters": '
     '{"keyword": "map{k}"}} -- that should show it', PHASE1,
     act("query_logs", "orders", keyword="map{k}")),
    # several objects: the first valid action wins
    ('{"thought": "auth looks bad"}\n{"action_type": "bogus"}\n'
     '{"action_type": "check_deploy_history", "target_service": "auth"}\n'
     '{"action_type": "view_alerts"}', PHASE1, act("check_deploy_history", "auth")),
    # Python literal, single quotes, True/None
    ("{'action_type': 'search_code', 'target_service': None, 'parameters': "
     "{'query': 'cache', 'regex': True}}", PHASE2, act("search_code", query="cache", regex=True)),
    # single quotes with JSON spellings of literals
    ("{'action_type': 'get_git_log', 'parameters': {'n_commits': 5, 'path': null}}", PHASE2,
     act("get_git_log", n_commits=5, path=None)),
    # trailing commas
    ('{"action_type": "read_file", "parameters": {"path": "orders/batch.py",},}', PHASE2,
     act("read_file", path="orders/batch.py")),
    # target given inside parameters
    ('{"action_type": "check_metrics", "parameters": {"target_service": "payment"}}', PHASE1,
     act("check_metrics", "payment")),
    # "action_type:service" spelling, as valid_actions writes it
    ('{"action_type": "rollback_deploy:orders", "parameters": {}}', PHASE1,
     act("rollback_deploy", "orders")),
    # a bare valid action
    ("query_logs:auth", PHASE1, act("query_logs", "auth")),
    # case, spaces and hyphens in the name
    ('{"action_type": "View-Alerts"}', PHASE1, act("view_alerts")),
    # wrapped in an "action" object
    ('{"reasoning": "deploy just before the page", "action": {"action_type": '
     '"check_deploy_history", "target_service": "orders"}}', PHASE1,
     act("check_deploy_history", "orders")),
    # function-call style
    ('{"name": "list_dir", "arguments": {"path": "."}}', PHASE2, act("list_dir", path=".")),
    # arguments given as a JSON string (OpenAI tool-call style)
    ('{"name": "read_file", "arguments": "{\\"path\\": \\"a.py\\"}"}', PHASE2,
     act("read_file", path="a.py")),
    # declare_root_cause with the service as target: moved into parameters
    ('{"action_type": "declare_root_cause", "target_service": "orders", "parameters": '
     '{"root_cause": "memory leak after the batch deploy", "fault_class": "memory_leak"}}',
     PHASE1, act("declare_root_cause", root_cause="memory leak after the batch deploy",
                 fault_class="memory_leak", service="orders")),
    # a belief with apostrophes and braces in its reasoning
    ('{"action_type": "transition_to_phase2", "parameters": {"belief": {"suspected_service": '
     '"auth", "service_confidence": 0.8, "reasoning": "auth\'s {config} deploy"}}}', PHASE1,
     act("transition_to_phase2", belief={"suspected_service": "auth", "service_confidence": 0.8,
                                          "reasoning": "auth's {config} deploy"})),
    # a diff with raw newlines inside the JSON string and braces in the code
    ('{"action_type": "propose_patch", "parameters": {"diff": "--- a/x.py\n+++ b/x.py\n'
     '@@ -1 +1 @@\n-d = {}\n+d = {1: 2}\n"}}', PHASE2,
     act("propose_patch", diff="--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-d = {}\n+d = {1: 2}\n")),
    # a targeted action given to an untargeted one: the stray target is dropped
    ('{"action_type": "view_alerts", "target_service": "orders"}', PHASE1, act("view_alerts")),
    # without valid_actions, anything in the vocabulary is accepted
    ('{"action_type": "scale_service", "target_service": "queue", "parameters": {"replicas": 4}}',
     None, act("scale_service", "queue", replicas=4)),
]


@pytest.mark.parametrize("text,valid,expected", GOOD)
def test_good_replies_parse_to_the_action(text, valid, expected):
    result = parse_action(text, valid)
    assert result.error is None, result.error
    assert result.ok
    assert result.action == expected


BROKEN = [
    ("", "empty"),
    ("   \n ", "empty"),
    ("I think we should look at the logs of orders.", "no JSON object"),
    ('{"action_type": "check_metrics", "target_service": "orders"', "not closed"),
    ('{"target_service": "orders", "parameters": {}}', 'no "action_type"'),
    ('{"action_type": "chek_metrics", "target_service": "orders"}', "did you mean 'check_metrics'"),
    ('{"action_type": "query_logs", "target_service": "ordres"}', "'query_logs:orders'"),
    ('{"action_type": "query_logs"}', "needs a target_service"),
    ('{"action_type": "rollback_deploy", "target_service": "auth"}', "not a valid action now"),
    ('{"action_type": "read_file", "parameters": {"path": "x"}}', "'read_file' is not a valid action now"),
    ('{"action_type": "view_alerts", "parameters": ["a"]}', "must be an object"),
    ('{"action_type": "check_metrics", "target_service": 3}', "must be a service name"),
    ('{"action_type": "__give_up__"}', "reserved"),
    ("[1, 2, 3]", "no JSON object"),
]


@pytest.mark.parametrize("text,reason", BROKEN)
def test_broken_replies_give_a_reason(text, reason):
    result = parse_action(text, PHASE1)
    assert result.action is None and not result.ok
    assert reason in result.error


def test_unknown_action_lists_the_valid_ones():
    error = parse_action('{"action_type": "fix_everything"}', PHASE2).error
    assert "unknown action_type 'fix_everything'" in error
    assert all(name in error for name in PHASE2)


def test_non_text_is_an_error_not_a_crash():
    assert "expected the reply as text" in parse_action(None).error
    assert "expected the reply as text" in parse_action({"action_type": "view_alerts"}).error


def test_seed_helper_is_compatible_and_never_terminal():
    assert _parse_action_json('{"action_type": "list_dir", "parameters": {"path": "."}}') == \
        act("list_dir", path=".")
    failed = _parse_action_json("sorry, I cannot help")
    assert failed["action_type"] == PARSE_ERROR
    assert "no JSON object" in failed["parameters"]["reason"]
    assert failed["action_type"] not in ACTION_NAMES


def test_reserved_actions_have_the_contract_shape():
    assert parse_error_action("x") == {"action_type": PARSE_ERROR, "target_service": None,
                                       "parameters": {"reason": "x"}}
    assert give_up_action("y")["action_type"] == GIVE_UP


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_any_text_returns_an_action_or_a_reason(text):
    result = parse_action(text, PHASE1)
    assert (result.action is None) != (result.error is None)
    if result.action is not None:
        key = result.action["action_type"]
        if result.action["target_service"]:
            key += ":" + result.action["target_service"]
        assert key in PHASE1


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(PHASE1), st.sampled_from(["json", "fenced", "prose", "colon"]),
       st.dictionaries(st.sampled_from(["limit", "keyword", "level"]),
                       st.one_of(st.integers(0, 50), st.text(max_size=20)), max_size=2))
def test_every_valid_action_round_trips(entry, style, params):
    action_type, _, target = entry.partition(":")
    obj = {"action_type": entry if style == "colon" else action_type,
           "target_service": None if style == "colon" else (target or None), "parameters": params}
    text = json.dumps(obj)
    text = {"fenced": f"```json\n{text}\n```", "prose": f"Next step: {text} (cheap)"}.get(style, text)
    result = parse_action(text, PHASE1)
    assert result.action == {"action_type": action_type, "target_service": target or None,
                             "parameters": params}

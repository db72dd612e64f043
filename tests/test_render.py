"""HTML rendering of observations, action results, scores and episodes (srelib.widgets' panes)."""

from __future__ import annotations

import re

from srelib.env.actions import SERVICES
from srelib.widgets.episode_panes import episode_html, score, timeline
from srelib.widgets.markup import MAX_HINTS, STYLE, code_block, diff_block
from srelib.widgets.observation_panes import STATUS_SYMBOL, status_board
from srelib.widgets.result_panes import action_result, log_lines

STATUSES = dict(zip(SERVICES, ["degraded", "healthy", "down", "healthy", "healthy", "healthy",
                               "healthy"]))


def test_status_board_has_a_chip_per_service_with_colour_and_word():
    html = status_board(STATUSES)
    assert html.count('class="srl-svc ') == len(SERVICES)
    assert 'srl-svc srl-down" title="orders: down"' in html
    assert 'srl-svc srl-degraded" title="api_gateway: degraded"' in html
    assert html.count("srl-healthy") == 5
    assert STATUS_SYMBOL["down"] in html  # not colour alone


def test_errors_are_shown_plainly_with_a_bounded_list_of_valid_actions():
    hints = [f"query_logs:{s}" for s in SERVICES] * 3
    html = action_result({"error": "Unknown service: ordrs", "valid_actions_hint": hints})
    assert "srl-error" in html and "Unknown service: ordrs" in html
    assert f"and {len(hints) - MAX_HINTS} more" in html


def test_alerts_render_as_a_table_with_severity_classes():
    alerts = [{"alert_id": "alert-001", "severity": "critical", "source_service": "orders",
               "description": "orders: memory usage 93% exceeds threshold 80%",
               "firing_since": "14:05", "rule_name": "HighMemoryUsage"},
              {"alert_id": "alert-002", "severity": "warning", "source_service": "api_gateway",
               "description": "p99 high", "firing_since": "14:06", "rule_name": "HighLatencyP99"}]
    html = action_result({"alerts": alerts, "count": 2})
    assert "<h3>Alerts (2)</h3>" in html
    header = re.search(r"<tr>(<th>.*?)</tr>", html).group(1)
    assert re.findall(r"<th>(.*?)</th>", header)[:3] == ["severity", "source_service", "rule_name"]
    assert 'class="srl-sev-critical">critical' in html
    assert 'class="srl-sev-warning">warning' in html
    assert "count: <b>2</b>" in html


def test_logs_highlight_levels_and_escape_messages():
    logs = [{"timestamp": "14:03", "level": "ERROR", "service": "orders",
             "message": "<script>alert(1)</script> OOMKilled", "trace_id": "trace-123456"},
            {"timestamp": "14:04", "level": "debug", "service": "orders", "message": "gc",
             "trace_id": None}]
    html = action_result({"logs": logs, "count": 2, "service": "orders"})
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'srl-lv-ERROR">ERROR' in html and 'srl-lv-DEBUG">DEBUG' in html
    assert "trace-123456" in html


def test_metric_history_becomes_one_sparkline_per_metric():
    history = [{"minute": m, "cpu": 20.0 + m, "memory": 40.0 + 2 * m, "rps": 500.0}
               for m in range(1, 31)]
    html = action_result({"metrics": history, "service": "orders", "data_points": 30})
    assert html.count("<svg") == 3
    assert "Metrics of orders" in html and "minutes 1\u201330" in html
    polyline = re.search(r'<polyline[^>]*points="([^"]+)"', html).group(1)
    assert len(polyline.split()) == 30
    assert "memory: <b>100\u202f%</b>" in html  # the latest value, with its unit
    assert "rps: <b>500\u202freq/s</b>" in html  # a flat series still draws
    assert "[21\u201350\u202f%]" in html  # the range, with its unit


def test_long_files_diffs_and_logs_scroll_in_a_capped_box():
    long_file = "\n".join(f"line {n}" for n in range(2000))
    for html in (code_block(long_file), diff_block("+x\n" * 2000),
                 log_lines([{"level": "INFO", "message": "m"}] * 50)):
        assert 'srl-scroll"' in html.split(">", 1)[0] + ">"
    assert re.search(r"\.srl-scroll\{max-height:\d+px;overflow:auto", STYLE)


def test_boards_list_services_in_one_order():
    from srelib.env.actions import SERVICES

    shuffled = dict(sorted({s: "healthy" for s in SERVICES}.items()))  # as a stored JSON has it
    html = status_board(shuffled)
    assert [html.index(f"title=\"{s}:") for s in SERVICES] == \
        sorted(html.index(f"title=\"{s}:") for s in SERVICES)
    deps = action_result({"dependencies": {"depends_on": ["database", "payment", "auth"]}})
    assert "auth, payment, database" in deps
    health = action_result({"health_check": {"dependencies": {"database": "ok",
                                                                     "auth": "ok"}}})
    assert health.index("auth") < health.index("database")


def test_files_have_line_numbers_from_the_requested_start():
    html = action_result({"path": "orders/batch.py", "content": "a = 1\nb = 2\n",
                                 "start_line": 10})
    numbers = re.findall(r'<td class="srl-ln">(\d+)</td>', html)
    assert numbers == ["10", "11"]  # the final newline adds no empty line
    assert "start_line" not in html  # shown as numbering, not as a raw field


def test_diffs_are_coloured_by_line_kind():
    diff = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-old\n+new\n ctx"
    html = action_result({"commit_sha": "a3f7c91", "diff": diff})
    assert '<div class="srl-diff-del">-old</div>' in html
    assert '<div class="srl-diff-add">+new</div>' in html
    assert '<div class="srl-diff-hunk">@@ -1 +1 @@</div>' in html
    assert html.count('class="srl-diff-file"') == 3


def test_search_hits_git_log_and_entries_are_tables():
    hits = action_result({"query": "cache", "hits": [
        {"path": "a.py", "line": 3, "match": "cache = {}"}], "count": 1})
    assert "Search hits for cache (1)" in hits and "<td>cache = {}</td>" in hits
    diff = action_result({"commit_sha": "a3f7c91", "files": ["a.py", "b.py"]})
    assert "files: <b>a.py, b.py</b>" in diff
    log = action_result({"commits": [
        {"sha": "a3f7c91", "author": "alice", "date": "2025-01-15", "message": "batch",
         "files": ["a.py", "b.py"]}]})
    assert "Git log (1, newest first)" in log and "<td>a.py, b.py</td>" in log
    listing = action_result({"path": ".", "entries": [{"name": "src", "type": "dir"}]})
    assert "Directory ." in listing and "<td>dir</td>" in listing


def test_unknown_result_keys_still_show():
    html = action_result({"replicas": 5, "odd": {"nested": [1, 2]}})
    assert "replicas: <b>5</b>" in html
    assert "&quot;nested&quot;" in html


def test_score_breakdown_marks_counted_components_and_patch_tests():
    breakdown = {"final": 0.615, "diagnosis": 0.8, "mitigation": None, "repair": 0.5,
                 "efficiency": 1.0, "counted": ["diagnosis", "repair", "efficiency"],
                 "weights": {"diagnosis": 0.3, "mitigation": 0.25, "repair": 0.35,
                             "efficiency": 0.1},
                 "patch": {"patch_applied": True, "apply_error": None, "tests_touched": [],
                           "FAIL_TO_PASS": {"t.py::test_fix": True},
                           "PASS_TO_PASS": {"t.py::test_old": False},
                           "resolved": "partial", "timed_out": False},
                 "declared_no_change": False, "harmful_actions": 0, "steps": {"p1": 5, "p2": 3}}
    html = score(breakdown)
    assert "Score: 0.615" in html
    assert html.count("srl-bar") == 3
    assert "<td>mitigation</td><td>0.25</td><td><span class=\"srl-meta\">not counted" in html
    assert "resolved <b>partial</b>" in html
    assert re.search(r"t.py::test_fix</td><td><span class=\"srl-pos\">pass", html)
    assert re.search(r"t.py::test_old</td><td><span class=\"srl-neg\">fail", html)


def _steps():
    base = {"minute": 4, "statuses": STATUSES, "effect": None, "error": None, "valid": True}
    return [
        {**base, "step": 1, "phase": 1, "reward": 0.13,
         "action": {"action_type": "view_alerts", "target_service": None, "parameters": {}}},
        {**base, "step": 2, "phase": 1, "reward": -0.05, "valid": False, "error": "Unknown service",
         "action": {"action_type": "query_logs", "target_service": "x", "parameters": {}}},
        {**base, "step": 3, "phase": 1, "reward": 0.05,
         "action": {"action_type": "transition_to_phase2", "target_service": None,
                    "parameters": {}},
         "effect": {"belief": {"suspected_service": "orders", "service_confidence": 0.8},
                    "bad_commit_sha": "a3f7c91"}},
        {**base, "step": 4, "phase": 2, "reward": 0.08,
         "action": {"action_type": "propose_patch", "target_service": None,
                    "parameters": {"diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b"}},
         "effect": {"diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b"}},
    ]


def test_timeline_has_a_reward_bar_per_step_and_marks_invalid_steps_and_handoff():
    html = timeline(_steps(), current=2)
    assert html.count("<title>step ") == 4
    assert html.count("\u2716</text>") == 1
    assert html.count('stroke="#8250df"') == 1  # the handoff line
    assert 'fill="none" stroke="#1f2328"' in html  # the current record outlined
    assert 'fill="#cf222e"><title>step 2' in html  # the negative reward is red


def test_episode_page_is_self_contained_and_shows_every_step():
    episode = {"policy": "heuristic", "task": "memory_leak", "pool": "C", "mode": "joint",
               "seed": 7, "steps": _steps(), "score": {"final": 0.5}, "terminated": True,
               "truncated": False, "ended_by": None, "parse_failures": 0, "error": None}
    page = episode_html(episode)
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and not re.search(r"(src|href)=", page)
    assert page.count("<details><summary>step ") == 4
    assert "Belief handed over" in page and "suspected_service" in page
    assert '<div class="srl-diff-add">+b</div>' in page
    assert "Unknown service" in page and "terminated" in page
    assert page == episode_html(episode)

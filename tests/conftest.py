"""Test-suite wide settings: which tests `make test-fast` leaves out."""

import pytest

#: Tests that train a model, run a notebook, a benchmark, a cluster or the type checker, or drive
#: a browser: seconds to minutes each. `make test-fast` (`pytest -m "not slow"`) skips them while
#: developing; `make test` runs everything. A module name marks all its tests; "module::test" marks one.
SLOW = {
    "test_agent", "test_bench_smoke", "test_executors", "test_train_notebook_gpu",
    "test_training", "test_typecheck", "test_widgets_browser",
    "test_serve::test_serve_bench_runs_end_to_end", "test_serve::test_cli_serves_on_loopback_only",
    "test_cli::test_demo_writes_tables_and_plots",
    "test_validity::test_gate_policy_stays_within_its_bound_on_every_task",
    "test_red_team_battery::test_the_audit_prints_the_battery_with_verdicts_and_exits_on_tells_only",
}


def pytest_collection_modifyitems(items):
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1]
        if module in SLOW or f"{module}::{item.originalname}" in SLOW:
            item.add_marker(pytest.mark.slow)

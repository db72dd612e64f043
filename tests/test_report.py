"""The run report (``srelib report RUN --html FILE``): one self-contained file holding the
run's provenance, verification, plots and tables, and every episode step by step, opened in
headless Chromium from disk with every network request refused."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from browser import needs_chromium, offline_page, screenshot

import srelib
from srelib.report import write_html
from srelib.results.store import EPISODES_FILE
from srelib.widgets.episode_panes import episode_header
from srelib.widgets.observation_panes import action_label
from srelib.widgets.playback import RECORD_PANES, record_panes, replay

POLICIES = ("null", "heuristic-revert")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A small run: two policies on one task, two seeds, in pool C (joint)."""
    out = tmp_path_factory.mktemp("run") / "run"
    srelib.evaluate({name: srelib.scripted_policy(name) for name in POLICIES},
                    tasks=["memory_leak"], pools=["C"], seeds=2, out=out, progress=False)
    return out


def _data(html: str) -> dict:
    raw = re.search(r'<script type="application/json" id="srl-data">(.*?)</script>', html, re.S)
    return json.loads(raw.group(1))


#: A pane's content as the page holds it, and a fragment as the browser parses it.
_PANE_HTML = "e => e.firstElementChild ? e.firstElementChild.innerHTML : ''"
_AS_PARSED = "html => { const d = document.createElement('div'); d.innerHTML = html; return d.innerHTML; }"


def _text(fragment: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def test_the_report_is_one_self_contained_deterministic_file(run, tmp_path):
    report = write_html(run, tmp_path / "a.html")
    html = report.path.read_text()
    assert report.episodes == 4 and report.problems == () and report.bytes == len(html.encode())
    assert "Verified:" in html and "all 4 episodes replay" in html
    assert not re.findall(r'(?:src|href)="(?!#|data:)', html), "a link leaves the file"
    assert "http://" not in html.split('id="srl-data"')[0].replace('"http://www.w3.org', "")
    for section in ("Provenance", "Score distributions", "Per task", "Localisation"):
        assert f"<h2>{section}</h2>" in html
    assert html.count("data:image/png;base64,") == 5
    assert "culprit_rank" in html and "localisation_phase1" in html  # the localisation columns
    assert re.search(r"\d\.\d\d \[\d\.\d\d, \d\.\d\d\]", html)  # the per-task CIs
    data = _data(html)
    assert [row[:5] for row in data["episodes"]] == [
        [p, "memory_leak", "C", "joint", s] for p in POLICIES for s in (0, 1)]
    assert write_html(run, tmp_path / "b.html").path.read_bytes() == report.path.read_bytes()


def test_a_changed_score_is_reported_and_marked(run, tmp_path):
    tampered = tmp_path / "run"
    tampered.mkdir()
    (tampered / "run.json").write_text((run / "run.json").read_text())
    lines = (run / EPISODES_FILE).read_text().splitlines()
    episode = json.loads(lines[0])
    episode["score"]["final"] = 1.0
    (tampered / EPISODES_FILE).write_text("\n".join([json.dumps(episode), *lines[1:]]) + "\n")
    report = write_html(tampered, tmp_path / "t.html")
    assert len(report.problems) == 1 and "differs from the replayed" in report.problems[0]
    html = report.path.read_text()
    assert "1 problem(s)" in html
    assert [row[7] for row in _data(html)["episodes"]] == [False, True, True, True]


def test_without_replay_the_report_says_so(run, tmp_path):
    report = write_html(run, tmp_path / "n.html", verify=False)
    assert report.problems is None
    html = report.path.read_text()
    assert "not verified" in html and [r[7] for r in _data(html)["episodes"]] == [None] * 4


def test_a_run_with_no_episodes_is_refused_and_nothing_is_written(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / EPISODES_FILE).write_text("")
    with pytest.raises(ValueError, match="no episodes"):
        write_html(tmp_path / "empty", tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def test_the_cli_writes_the_report_and_says_what_it_weighs(run, tmp_path, capsys):
    from srelib.cli import main

    target = tmp_path / "cli.html"
    assert main(["report", str(run), "--html", str(target), "--plots", str(tmp_path / "p"),
                 "--workers", "2"]) == 0
    said = capsys.readouterr().out.strip().splitlines()[-1]
    assert said == f"report: {target} ({target.stat().st_size / 1e6:.2f} MB, 4 episodes, verified)"


@needs_chromium
@pytest.mark.slow
def test_an_episode_steps_in_chromium_as_the_viewer_draws_it(run, tmp_path):
    report = write_html(run, tmp_path / "report.html")
    episode = srelib.load_episode(run, 2)  # heuristic-revert, seed 0: both phases
    first, observations, note = replay(episode)
    expected = [record_panes(episode, first, observations, note, i)
                for i in range(len(episode["steps"]))]
    with offline_page() as (page, refused):
        page.goto(report.path.as_uri())
        assert "Verified:" in page.inner_text("#srl-verified")
        assert page.inner_text("#srl-count") == "4 of 4 episodes"
        page.select_option("#srl-f-policy", "heuristic-revert")
        assert page.inner_text("#srl-count") == "2 of 4 episodes"
        page.click("tr.srl-row[data-i='2']")
        page.wait_for_selector("#srl-header")
        assert " ".join(page.inner_text("#srl-header").split()) == _text(episode_header(episode))
        assert "heuristic-revert on" in page.inner_text("#srl-header")
        total = len(expected)
        for i in (0, 1, 2):
            assert page.inner_text("#srl-pos") == f"record {i + 1} of {total}"
            for name in RECORD_PANES:  # every pane holds what the widgets render for it
                shown = page.eval_on_selector(f"#srl-p-{name}", _PANE_HTML)
                assert shown == page.evaluate(_AS_PARSED, expected[i][name]), (i, name)
            assert _text(action_label(episode["steps"][i]["action"])) in \
                page.inner_text("#srl-p-action")
            if i == 1:
                screenshot(page, "report_episode.png")
            page.click("#srl-next")
        page.fill("#srl-step", str(total - 1))
        page.dispatch_event("#srl-step", "input")
        assert page.inner_text("#srl-pos") == f"record {total} of {total}"
        assert page.inner_text("#srl-p-score").strip()  # the score shows at the last record
        assert page.evaluate("location.hash") == f"#e=2&r={total - 1}"
        page.reload()  # the link opens the same record
        page.wait_for_selector("#srl-header")
        assert page.inner_text("#srl-pos") == f"record {total} of {total}"
        page.goto(report.path.as_uri())
        screenshot(page, "report_summary.png", full_page=False)
    assert refused == []

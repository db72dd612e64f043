"""End to end in a real browser: JupyterLab on 127.0.0.1, Debian's Chromium driven by Playwright.

Opens tests/fixtures/stepper.ipynb (an EpisodeStepper with a three-step scripted policy), runs
it, clicks Step three times and checks that the step counter and the status board changed; and
tests/fixtures/score_pane.ipynb (an episode played to the end) at laptop widths, checking that
the hidden tests' result column stays inside the score pane. Screenshots are saved under
tests/artifacts/ for people to look at. JupyterLab and its kernels always stop, whatever happens.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from srelib.training.tiny_model import free_port

CHROMIUM = "/usr/bin/chromium"
HERE = Path(__file__).parent
ARTIFACTS = HERE / "artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"Chromium is not installed at {CHROMIUM} "
                                       "(apt-get install chromium)")


def _processes_mentioning(text: str) -> list[int]:
    """Pids whose command line mentions ``text`` (our temp dir: the server and its kernels)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            pids.append(int(entry.name))
    return pids


@pytest.fixture
def jupyterlab(tmp_path):
    """A JupyterLab server on a free loopback port, serving copies of the fixture notebooks."""
    root = tmp_path / "root"
    root.mkdir()
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)  # no news or update pop-ups over the widget
    (settings / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}')
    for notebook in (HERE / "fixtures").glob("*.ipynb"):
        shutil.copy(notebook, root / notebook.name)
    token, port = secrets.token_hex(16), free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_PLATFORM_DIRS": "1",
           "IPYTHONDIR": str(tmp_path / "ipython")}
    env.pop("JUPYTER_TOKEN", None)
    log = open(tmp_path / "jupyterlab.log", "wb")
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser",
         f"--ServerApp.token={token}", f"--port={port}", "--ip=127.0.0.1",
         f"--ServerApp.root_dir={root}", f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
         f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.expose_app_in_browser=True", "--ServerApp.port_retries=0",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not start:\n" +
                                       (tmp_path / "jupyterlab.log").read_text())
                time.sleep(0.3)
        yield base, token
    finally:
        server.send_signal(signal.SIGTERM)  # the server shuts its kernels down on the way out
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()
        for pid in _processes_mentioning(str(tmp_path)):  # a kernel that outlived the server
            os.kill(pid, signal.SIGKILL)
        assert not _processes_mentioning(str(tmp_path)), "a kernel outlived JupyterLab"


def _text(page, selector: str) -> str:
    return page.locator(selector).first.inner_text()


def _open_and_run(page, base: str, token: str, name: str) -> None:
    """Open a notebook in JupyterLab, wait for its kernel and run all its cells."""
    page.goto(f"{base}/lab/tree/{name}?token={token}")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && window.jupyterapp.shell.currentWidget.sessionContext",
                           timeout=30_000)
    page.wait_for_function("window.jupyterapp.shell.currentWidget.sessionContext.session"
                           "?.kernel?.connectionStatus === 'connected'", timeout=30_000)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")


#: The class of the first ancestor that hides part of the element's width (None: all shown).
_CLIPPED_BY = """cell => {
  const r = cell.getBoundingClientRect();
  for (let e = cell.parentElement; e; e = e.parentElement) {
    if (getComputedStyle(e).overflowX === "visible") continue;
    const box = e === document.documentElement ? {left: 0, right: window.innerWidth}
                                               : e.getBoundingClientRect();
    if (r.left < box.left - 1 || r.right > box.right + 1) return e.className || e.tagName;
  }
  return r.right > window.innerWidth + 1 ? "the window" : null;
}"""


def _screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)  # ignored by git: refresh the committed set with git add -f
    shot = ARTIFACTS / name
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")
    return shot


@contextlib.contextmanager
def _notebook_page(jupyterlab, notebook: str, width: int, height: int):
    """A Chromium page on ``notebook``, opened and run in the test's JupyterLab."""
    from playwright.sync_api import sync_playwright

    base, token = jupyterlab
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            _open_and_run(page, base, token, notebook)
            yield page
        finally:
            browser.close()


def test_stepper_steps_in_a_real_jupyterlab(jupyterlab):
    from playwright.sync_api import expect

    with _notebook_page(jupyterlab, "stepper.ipynb", 1400, 1300) as page:
        counter = page.locator(".srl-counter")
        expect(counter).to_contain_text("step 0/", timeout=30_000)
        board_before = _text(page, ".srl-board-pane")
        counter_before = counter.inner_text()
        # the icon's glyph is part of the accessible name, so match the visible text
        step = page.locator("button.widget-button").filter(has_text=re.compile("^Step$"))
        for n in (1, 2, 3):
            step.click()
            expect(counter).to_contain_text(f"step {n}/", timeout=15_000)
        board_after = _text(page, ".srl-board-pane")
        assert counter.inner_text() != counter_before
        assert board_after != board_before, f"board unchanged: {board_after!r}"
        assert "orders" in board_after and "healthy" in board_after
        expect(page.locator(".jp-OutputArea-output").first).to_contain_text("Alerts")
        _screenshot(page, "episode_stepper.png")


def test_score_pane_keeps_the_result_column_visible_at_laptop_widths(jupyterlab):
    from playwright.sync_api import expect

    with _notebook_page(jupyterlab, "score_pane.ipynb", 1024, 900) as page:
        tests = page.locator("table.srl-tests")
        expect(tests).to_be_visible(timeout=150_000)
        for width in (1024, 1400):
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(300)  # let JupyterLab lay the panes out again
            cells = tests.locator("th, td")
            assert cells.count() >= 6  # the header and at least one test
            for i in range(cells.count()):
                cell = cells.nth(i)
                assert cell.bounding_box()["width"] > 20, f"a column is squeezed at {width}px"
                clipper = cell.evaluate(_CLIPPED_BY)
                assert clipper is None, \
                    f"{cell.inner_text()!r} is cut off by {clipper!r} at {width}px"
            expect(tests.locator("th.srl-result")).to_have_text("result")
            score = tests.locator("xpath=ancestor::div[contains(@class,'widget-html')][1]")
            score.screenshot(path=str(_screenshot(page, f"score_pane_{width}px.png")))

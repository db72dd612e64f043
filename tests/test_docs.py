"""The documentation: every public function of ``srelib.__all__`` documents its parameters,
returns and raises (Google style, which the API reference renders), the README stays a short
front page that points into the site, and the built site works in headless Chromium: a search
finds a function, its reference page shows its parameters, a notebook page shows its plots."""

from __future__ import annotations

import functools
import http.server
import inspect
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from browser import needs_chromium, offline_page, screenshot

import srelib

ROOT = Path(__file__).resolve().parents[1]
README_LINES = 150


def _public_functions():
    return [(name, getattr(srelib, name)) for name in srelib.__all__
            if inspect.isfunction(getattr(srelib, name))]


@pytest.mark.parametrize("name,function", _public_functions(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_public_function_documents_args_returns_and_raises(name, function):
    doc = inspect.getdoc(function) or ""
    params = [p for p in inspect.signature(function).parameters.values()]
    if params:
        assert "\nArgs:\n" in doc, f"{name} has no Args section"
        args = doc.split("\nArgs:\n", 1)[1].split("\n\n", 1)[0]
        listed = set(re.findall(r"^    \**(\w+):", args, re.M))
        missing = [p.name for p in params if p.name not in listed]
        assert not missing, f"{name}'s Args do not list {missing}"
    assert "\nReturns:\n" in doc, f"{name} has no Returns section"
    raised = set(re.findall(r"^\s+raise (\w+)", inspect.getsource(function), re.M))
    if raised:
        assert "\nRaises:\n" in doc, f"{name} raises {raised} and has no Raises section"


def test_the_readme_is_a_short_front_page_that_points_into_the_site():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= README_LINES
    assert "make demo" in readme and "make test" in readme
    for page in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / page).exists(), f"the README links to {page}, which does not exist"
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in ("getting-started.md", "concepts/score.md", "benchmarks.md", "changelog.md"):
        assert page in nav


def test_ci_runs_the_readme_test_command_and_builds_the_docs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    commands = re.findall(r"^(make [\w-]+)\s+#", readme, re.M)
    assert commands == ["make demo", "make test"]
    run = [line.strip() for line in ci.splitlines()]
    assert "make test" in run and "make docs" in run and "make check-wheel" in run


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built with --strict into a temporary folder, served on a loopback port."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    handler.log_message = lambda *args: None
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", out
    finally:
        server.shutdown()
        server.server_close()


SEARCH_READY = """() => {
    const meta = document.querySelector(".md-search-result__meta");
    return meta !== null && meta.textContent.trim() !== "" && !meta.textContent.includes("Initializing");
}"""


@needs_chromium
@pytest.mark.slow
def test_the_site_searches_a_function_shows_its_reference_and_a_notebook_plot(site):
    base, folder = site
    assert (folder / "reference" / "episodes" / "index.html").exists()
    with offline_page() as (page, refused):
        page.goto(base + "/")
        page.click("input.md-search__input")  # the header's search box
        # the index is built in a worker on first use: type (key by key, as the search box
        # answers keystrokes, not a pasted value) once it no longer says "Initializing search"
        page.wait_for_function(SEARCH_READY, timeout=120_000)
        page.locator("input.md-search__input").press_sequentially("evaluate")
        page.locator(".md-search-result__item a").first.wait_for(timeout=60_000)
        hits = page.locator(".md-search-result__item a").evaluate_all(
            "links => links.map(a => a.href)")
        assert any("reference/episodes/" in h for h in hits), hits
        screenshot(page, "docs_search.png", full_page=False)
        page.click(".md-search-result__item a[href*='reference/episodes/']")
        page.wait_for_url(re.compile(r".*reference/episodes/.*"))
        heading = page.locator("[id='srelib.runners.rollout.evaluate']")
        heading.scroll_into_view_if_needed()
        section = page.locator("div.doc-object:has([id='srelib.runners.rollout.evaluate'])").first
        text = section.inner_text()
        for expected in ("evaluate", "Parameters", "policies", "Returns", "Raises", "ValueError"):
            assert expected in text, expected
        screenshot(page, "docs_reference.png", full_page=False)
        page.goto(base + "/notebooks/02_baselines/")
        images = page.locator("img[src^='data:image/png']")
        images.first.scroll_into_view_if_needed()
        assert images.count() >= 1
        size = images.first.evaluate("img => [img.complete, img.naturalWidth, img.getBoundingClientRect().height]")
        assert size[0] and size[1] > 100 and size[2] > 50, size  # decoded and drawn
        screenshot(page, "docs_notebook.png", full_page=False)
    # the site loads nothing it needs from elsewhere (no fonts, no scripts): what the browser
    # was refused is the header's repository widget asking GitHub for its counts and a
    # notebook's own Colab badge, both of which the pages show without
    optional = ("https://api.github.com/repos/", "https://colab.research.google.com/assets/")
    assert [u for u in refused if not u.startswith(optional)] == [], refused

"""What the browser tests share (not part of the package): Debian's Chromium driven by
Playwright, pages that may reach only the loopback and files, and screenshots under
tests/artifacts/ (ignored by git: refresh a committed set with ``git add -f``)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

import pytest

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                    reason=f"Chromium is not installed at {CHROMIUM} "
                                           "(apt-get install chromium)")


@contextlib.contextmanager
def offline_page(width: int = 1280, height: int = 900) -> Iterator[tuple[object, list[str]]]:
    """A Chromium page that may load only ``file:`` and loopback URLs, and the list of every
    other URL it tried (each refused)."""
    from playwright.sync_api import sync_playwright

    refused: list[str] = []

    def route(r):
        url = r.request.url
        if url.startswith(("file:", "data:", "http://127.0.0.1", "blob:")):
            r.continue_()
        else:
            refused.append(url)
            r.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.route("**/*", route)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            yield page, refused
            assert not errors, f"script errors on the page: {errors}"
        finally:
            browser.close()


def screenshot(page, name: str, full_page: bool = True) -> Path:
    """Save a screenshot of ``page`` as tests/artifacts/NAME and return its path."""
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / name
    page.screenshot(path=str(shot), full_page=full_page)
    print(f"screenshot: {shot}")
    return shot

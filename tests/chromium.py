"""Debian's Chromium, driven by Playwright, for the tests that need a real
browser (it cannot download its own here: `executable_path`)."""

import os
import shutil
from collections.abc import Iterator
from typing import Any

from tests.conftest import unavailable

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def launched_chromium(what: str) -> Iterator[Any]:
    """A headless Chromium for a module's tests (a fixture yields from it);
    `what` names them in the reason they are skipped, or fail under CI,
    when Playwright or Chromium is missing (.ci/run installs both)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if sync_playwright is None or not os.path.exists(CHROMIUM):
        unavailable(what, "playwright or Debian's chromium is missing (see .ci/run)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()

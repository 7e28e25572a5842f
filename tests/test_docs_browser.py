"""/docs in a real headless Chromium: the operations are listed, "Try it out"
creates a session, and no request leaves this host (no CDN)."""

from urllib.parse import urlsplit

import httpx
import pytest

from tests.chromium import launched_chromium

CREATE_OPERATION = (
    "#operations-sessions-create_session_apps__app_name__users__user_id__sessions_post"
)


@pytest.fixture(scope="module")
def browser():
    yield from launched_chromium("the browser test")


@pytest.fixture(scope="module")
def server(sqlite_server):
    return sqlite_server


def _page(browser):
    context = browser.new_context()
    page = context.new_page()
    # What reached the network: a request the page's Content-Security-Policy
    # blocks never leaves the browser, and fails instead of finishing.
    requested: list[str] = []
    failed: list[tuple[str, str | None]] = []
    page.on("requestfinished", lambda request: requested.append(request.url))
    page.on("requestfailed", lambda request: failed.append((request.url, request.failure)))
    return context, page, requested, failed


def _hosts(urls: list[str]) -> set[str]:
    return {urlsplit(url).hostname for url in urls if not url.startswith(("data:", "blob:"))}


def test_swagger_ui_try_it_out_creates_a_session_with_no_request_off_host(browser, server):
    context, page, requested, failed = _page(browser)
    page.on("dialog", lambda dialog: dialog.dismiss())
    try:
        page.goto(f"{server.base_url}/docs")
        operation = page.locator(CREATE_OPERATION)
        operation.wait_for(timeout=20_000)
        assert page.locator(".opblock").count() >= 10  # every operation is listed
        operation.locator(".opblock-summary").click()
        operation.locator("button.try-out__btn").click()
        operation.locator('input[placeholder="app_name"]').fill("docs-app")
        operation.locator('input[placeholder="user_id"]').fill("docs-user")
        # The body as Swagger UI fills it in: the README's example (not one
        # generated from the schema, whose session id pattern gave ~y{y{z{|).
        operation.locator("button.execute").click()
        status = operation.locator(".live-responses-table .response .response-col_status")
        status.first.wait_for(timeout=20_000)
        assert status.first.inner_text().strip().startswith("201")
    finally:
        context.close()
    created = httpx.get(f"{server.base_url}/apps/docs-app/users/docs-user/sessions/trip-1")
    assert created.status_code == 200
    assert created.json()["state"] == {"stage": "new", "user:login_count": 1}
    assert _hosts(requested) == {"127.0.0.1"}, requested
    assert not [url for url, _ in failed if urlsplit(url).hostname != "127.0.0.1"], failed


def test_redoc_renders_offline(browser, server):
    context, page, requested, failed = _page(browser)
    try:
        page.goto(f"{server.base_url}/redoc")
        title = page.locator("h1", has_text="session-state")
        title.first.wait_for(timeout=20_000)
        operations = page.get_by_text("Create a session")
        operations.first.wait_for(state="attached", timeout=20_000)
    finally:
        context.close()
    assert _hosts(requested) == {"127.0.0.1"}, requested
    # ReDoc's footer asks for its logo from a CDN: the page's policy stops it.
    off_host = [(url, why) for url, why in failed if urlsplit(url).hostname != "127.0.0.1"]
    assert all(why == "csp" for _, why in off_host), off_host

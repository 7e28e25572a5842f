"""The inspector's page over HTTP: a strict Content-Security-Policy on the
page and every file, only the inspector's own files served, /ui out of the
OpenAPI document, and SESSION_STATE_UI=off answering 404. (The browser tests
are in tests/test_inspector.py: Playwright's sync API and asyncio tests do
not share a module.)"""

from session_state.core.config import Settings
from session_state.inspector.routes import CONTENT_SECURITY_POLICY, STATIC
from tests.conftest import asgi_client


async def test_the_page_and_its_files_carry_a_strict_csp(tmp_path):
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'ui.db'}")
    async with asgi_client(settings) as http:
        moved = await http.get("/ui")
        assert moved.status_code == 308 and moved.headers["location"] == "ui/"
        for path in ["/ui/", *(f"/ui/static/{file.name}" for file in STATIC.iterdir())]:
            answer = await http.get(path)
            assert answer.status_code == 200, path
            assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
            assert answer.headers["x-content-type-options"] == "nosniff"
        assert "script-src 'self';" in CONTENT_SECURITY_POLICY
        assert "unsafe" not in CONTENT_SECURITY_POLICY
        for missing in ["/ui/static/nope.js", "/ui/static/..%2Froutes.py", "/ui/static/"]:
            assert (await http.get(missing)).status_code == 404, missing
        assert not any(
            path.startswith("/ui") for path in (await http.get("/openapi.json")).json()["paths"]
        )


async def test_ui_off_answers_404(tmp_path):
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'off.db'}", ui="off")
    async with asgi_client(settings) as http:
        for path in ["/ui", "/ui/", "/ui/static/app.js"]:
            assert (await http.get(path)).status_code == 404
        assert (await http.get("/apps")).status_code == 200


def test_no_page_or_script_writes_html_from_text():
    """The rule the XSS test samples, held by every script: no innerHTML,
    outerHTML, insertAdjacentHTML, document.write or eval."""
    for script in STATIC.glob("*.js"):
        source = script.read_text()
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("]:
            assert sink not in source, f"{script.name} uses {sink}"

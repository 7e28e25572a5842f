"""The inspector at /ui in a real headless Chromium against `session-state
serve`: a seeded session's state at a chosen event, an append showing up
live, hostile text shown as text, the key prompt and an app-scoped key, the
actions behind their confirmations, LangGraph threads and checkpoints; and
over HTTP: the tests/test_inspector_http.py checks the page's headers and
SESSION_STATE_UI."""

import json
import uuid
from collections.abc import Iterator
from urllib.parse import urlencode

import httpx
import pytest

from tests.chromium import launched_chromium
from tests.conftest import ServerProcess

XSS = "<img src=x onerror=window.__xss=1>"
WAIT_MS = 15_000  # a loaded CI machine; the page itself waits on nothing


@pytest.fixture(scope="module")
def browser():
    yield from launched_chromium("the inspector's browser tests")


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest) -> ServerProcess:
    return request.getfixturevalue(f"{request.param}_server")


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.errors = errors
    yield opened
    context.close()


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _seed(base_url: str, app: str, user: str, session: str, headers=None) -> str:
    """A session created with state, and four events across the scopes."""
    path = f"{base_url}/apps/{app}/users/{user}/sessions"
    with httpx.Client(timeout=30, headers=headers) as http:
        created = http.post(
            path,
            json={
                "sessionId": session,
                "state": {"title": "draft", "origin": "web"},
                "labels": {"env": "dev"},
            },
        )
        assert created.status_code == 201, created.text
        events = [
            {
                "id": "e1",
                "author": "user",
                "invocationId": "inv-1",
                "content": {"role": "user", "parts": [{"text": "Book a train to Porto"}]},
                "actions": {
                    "stateDelta": {"title": "Porto", "user:home": "Lisbon", "app:model": "m1"}
                },
            },
            {
                "id": "e2",
                "author": "planner",
                "invocationId": "inv-1",
                "content": {
                    "role": "model",
                    "parts": [{"functionCall": {"name": "find_trains", "args": {"to": "Porto"}}}],
                },
                "actions": {"stateDelta": {"booking": {"train": "09:00"}, "temp:scratch": 1}},
            },
            {
                "id": "e3",
                "author": "planner",
                "invocationId": "inv-2",
                "content": {"role": "model", "parts": [{"text": "Booked."}]},
                "actions": {"stateDelta": {"user:home": "Porto", "title": None}},
            },
        ]
        appended = http.post(f"{path}/{session}/events/batch", json={"events": events})
        assert appended.status_code == 201, appended.text
    return f"{base_url}/ui/#/apps/{app}/users/{user}/sessions/{session}"


def _rows(page, table: str) -> dict[str, tuple[str, str]]:
    """key -> (class, text) of a state table in the event panel."""
    found = page.eval_on_selector_all(
        f".detail table.{table} tr",
        "rows => rows.map(r => [r.dataset.key, r.className, r.innerText])",
    )
    return {key: (kind, text) for key, kind, text in found}


def test_the_state_at_a_chosen_event_is_replayed_by_scope(page, server):
    app, user = _unique("insp"), "ada"
    url = _seed(server.base_url, app, user, "trip")
    page.goto(f"{url}?event=e2")
    page.locator(".detail h2", has_text="Event 2 of 3").wait_for(timeout=WAIT_MS)
    delta = _rows(page, "delta")
    assert delta["booking"][0] == "added"
    assert "temp:scratch" not in delta  # temp: keys are never stored
    merged = _rows(page, "state")
    # As of e2: e1's keys of every scope, e3's changes not yet.
    assert '"Lisbon"' in merged["user:home"][1]
    assert '"m1"' in merged["app:model"][1]
    assert '"Porto"' in merged["title"][1]
    assert merged["booking"][0] == "added"
    # The next event, by keyboard: user:home changed, title removed (null).
    page.locator(".timeline").focus()
    page.keyboard.press("ArrowDown")
    page.locator(".detail h2", has_text="Event 3 of 3").wait_for(timeout=WAIT_MS)
    delta = _rows(page, "delta")
    assert delta["user:home"][0] == "changed"
    assert delta["title"][0] == "removed"
    assert "event=e3" in page.url  # the link names the event shown
    # What no event carries is told apart: a key given at create.
    current = page.locator("details.current")
    assert "1 not from these events" in current.locator("summary").inner_text()
    assert current.locator("table.outside tr[data-key=origin]").count() == 1
    # Function calls are collapsed, the raw JSON is on demand.
    page.keyboard.press("ArrowUp")
    call = page.locator(".detail details.call")
    assert call.count() == 1 and call.get_attribute("open") is None
    assert "find_trains" in call.inner_text()
    assert not page.errors


def test_an_append_shows_up_live_in_the_session_and_in_the_user_list(page, server):
    app, user = _unique("live"), "bo"
    url = _seed(server.base_url, app, user, "s1")
    page.goto(url)
    page.locator("#main[data-loaded]").wait_for(timeout=WAIT_MS)
    page.locator("#live[data-status=live]").wait_for(timeout=WAIT_MS)
    with httpx.Client(timeout=30) as http:
        answer = http.post(
            f"{server.base_url}/apps/{app}/users/{user}/sessions/s1/events",
            json={
                "id": "e4",
                "author": "planner",
                "content": {"parts": [{"text": "appended while open"}]},
                "actions": {"stateDelta": {"user:home": "Faro"}},
            },
        )
        assert answer.status_code == 201
    page.locator(".row", has_text="appended while open").wait_for(timeout=WAIT_MS)
    # The page followed the tail: the new event is selected, its change shown.
    page.locator(".detail h2", has_text="Event 4 of 4").wait_for(timeout=WAIT_MS)
    assert _rows(page, "delta")["user:home"][0] == "changed"
    assert page.locator(".session-head .revision").inner_text() == "4"

    page.goto(f"{server.base_url}/ui/#/apps/{app}/users/{user}")
    page.locator("table.list tr[data-session=s1]").wait_for(timeout=WAIT_MS)
    page.locator("#live[data-status=live]").wait_for(timeout=WAIT_MS)
    with httpx.Client(timeout=30) as http:
        created = http.post(
            f"{server.base_url}/apps/{app}/users/{user}/sessions", json={"sessionId": "s2"}
        )
        assert created.status_code == 201
    page.locator("table.list tr[data-session=s2]").wait_for(timeout=WAIT_MS)
    assert not page.errors


def test_a_memory_search_shows_which_side_found_each_result_and_its_score(page, server):
    app, user = _unique("mem"), "ada"
    memory = f"{server.base_url}/apps/{app}/users/{user}/memory"
    texts = {
        "dog": "I adopted a golden retriever puppy last spring.",
        "flight": "My flight to Lisbon leaves on the 14th of March.",
        "bank": "Can you remind me to call the bank tomorrow?",
    }
    entries = [
        {"id": key, "content": {"role": "user", "parts": [{"text": text}]}}
        for key, text in texts.items()
    ]
    question = "dog breed, Lisbon and the river bank"
    with httpx.Client(timeout=30) as http:
        assert http.post(f"{memory}/entries", json={"memories": entries}).status_code == 200
        answer = http.get(memory, params={"query": question, "mode": "hybrid", "limit": 50})
    scores = {found["id"]: found["score"] for found in answer.json()["memories"]}
    searches: list[str] = []
    page.on("request", lambda sent: searches.append(sent.url) if "/memory?" in sent.url else None)
    page.goto(f"{server.base_url}/ui/#/apps/{app}/users/{user}/memory?{urlencode({'q': question})}")
    page.locator("li.memory").first.wait_for(timeout=WAIT_MS)
    shown = page.eval_on_selector_all(
        "li.memory",
        """items => items.map(item => [
            item.dataset.memoryId,
            item.querySelector('.chip.mode').innerText,
            item.querySelector('.chip.score').innerText,
        ])""",
    )
    # A paraphrase (no word shared), a name held, a word held in another sense.
    assert [(key, side) for key, side, _ in shown] == [
        ("flight", "both"),
        ("dog", "meaning"),
        ("bank", "keyword"),
    ]
    for key, _, score in shown:
        assert score == f"score {scores[key]:.3f}", (key, score)
    assert len(searches) == 1, searches  # the API's fields, no search by one side alone
    assert not page.errors


def test_without_a_question_every_memory_is_listed_last_added_first_page_by_page(page, server):
    app, user = _unique("mem"), "bo"
    entries = [
        {"id": f"m{index:02}", "content": {"parts": [{"text": f"fact number {index}"}]}}
        for index in range(55)
    ]
    with httpx.Client(timeout=30) as http:
        stored = http.post(
            f"{server.base_url}/apps/{app}/users/{user}/memory/entries",
            json={"memories": entries},
        )
        assert stored.status_code == 200, stored.text
    listings: list[str] = []
    page.on("request", lambda sent: listings.append(sent.url) if "/entries?" in sent.url else None)
    page.goto(f"{server.base_url}/ui/#/apps/{app}/users/{user}/memory")
    items = page.locator("ol[data-listing] li.memory")
    items.nth(49).wait_for(timeout=WAIT_MS)
    assert items.count() == 50
    more = page.locator("button.more")
    assert more.is_visible()
    more.click()
    items.nth(54).wait_for(timeout=WAIT_MS)
    shown = page.eval_on_selector_all(
        "ol[data-listing] li.memory", "items => items.map(item => item.dataset.memoryId)"
    )
    assert shown == [f"m{index:02}" for index in reversed(range(55))]
    assert page.locator("li.memory pre.text").first.inner_text() == "fact number 54"
    assert not more.is_visible()
    assert len(listings) == 2, listings
    assert not page.errors


def test_hostile_text_is_shown_as_text_and_never_run(page, sqlite_server):
    base = sqlite_server.base_url
    app, user, session = _unique("xss"), f"u{XSS}", f"s{XSS}"
    sessions = f"{base}/apps/{app}/users/{httpx.URL(user).raw_path.decode()}/sessions"
    with httpx.Client(timeout=30) as http:
        made = http.post(sessions, json={"sessionId": session, "state": {XSS: XSS}})
        assert made.status_code == 201, made.text
        own = f"{sessions}/{httpx.URL(session).raw_path.decode()}"
        event = {
            "id": XSS,
            "author": XSS,
            "invocationId": XSS,
            "content": {
                "parts": [{"text": XSS}, {"functionCall": {"name": XSS, "args": {XSS: XSS}}}]
            },
            "actions": {"stateDelta": {f"user:{XSS}": XSS, "title": XSS}},
        }
        assert http.post(f"{own}/events", json=event).status_code == 201
        memory = f"{base}/apps/{app}/users/{httpx.URL(user).raw_path.decode()}/memory/entries"
        entry = {"id": "m1", "content": {"parts": [{"text": f"hostile {XSS}"}]}}
        stored = http.post(memory, json={"memories": [entry], "customMetadata": {"k": XSS}})
        assert stored.status_code == 200, stored.text
    from urllib.parse import quote

    route = f"#/apps/{app}/users/{quote(user, safe='')}"
    views = [
        f"#/apps/{app}",  # the user id, in the users and the latest sessions
        f"{route}?title=title",
        f"{route}/sessions/{quote(session, safe='')}",
        f"{route}/memory?q=hostile&mode=keyword",
        f"{route}/memory",  # the listing
    ]
    for view in views:
        page.goto(f"{base}/ui/{view}")
        page.get_by_text(XSS).first.wait_for(timeout=WAIT_MS)
        assert page.evaluate("window.__xss") is None
        assert page.locator("main img").count() == 0
    assert not page.errors


def test_with_api_keys_the_page_asks_for_one_and_an_app_key_sees_its_app(browser, tmp_path):
    keys = {"k-all-0123456789abcdef": ["*"], "k-one-0123456789abcdef": ["one"]}
    server = ServerProcess(
        f"sqlite+aiosqlite:///{tmp_path / 'keys.db'}", SESSION_STATE_API_KEYS=json.dumps(keys)
    ).start()
    try:
        everything = {"Authorization": "Bearer k-all-0123456789abcdef"}
        _seed(server.base_url, "one", "ada", "s1", headers=everything)
        _seed(server.base_url, "two", "ada", "s1", headers=everything)
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{server.base_url}/ui/")
        prompt = page.locator("form.key-prompt input[type=password]")
        prompt.wait_for(timeout=WAIT_MS)
        prompt.fill("k-one-0123456789abcdef")
        page.keyboard.press("Enter")
        page.locator("table.list a", has_text="one").wait_for(timeout=WAIT_MS)
        assert page.locator("table.list tbody tr").count() == 1  # not "two"
        stored = page.evaluate("[sessionStorage.length, localStorage.length, location.href]")
        assert stored[0] == 1 and stored[1] == 0
        assert "0123456789abcdef" not in stored[2]
        # The other app, asked by its link: refused, with a way to use another key.
        page.goto(f"{server.base_url}/ui/#/apps/two")
        page.locator("h1", has_text="Not allowed").wait_for(timeout=WAIT_MS)
        page.locator("#forget-key").click()
        prompt.wait_for(timeout=WAIT_MS)
        assert page.evaluate("sessionStorage.length") == 0
        context.close()
    finally:
        server.stop()


def test_fork_labels_and_delete_go_through_a_confirmation(page, sqlite_server):
    base = sqlite_server.base_url
    app, user = _unique("act"), "cy"
    url = _seed(base, app, user, "src")
    page.goto(f"{url}?event=e2")
    page.locator(".detail h2", has_text="Event 2 of 3").wait_for(timeout=WAIT_MS)

    page.get_by_role("button", name="Edit labels…").click()
    dialog = page.locator("dialog.confirm")
    dialog.locator("textarea").fill("env:prod\nteam:core")
    dialog.get_by_role("button", name="Save labels").click()
    page.locator(".session-head .labels", has_text="team:core").wait_for(timeout=WAIT_MS)

    page.get_by_role("button", name="Fork from here…").click()
    dialog.get_by_role("button", name="Cancel").click()  # cancelled: nothing made
    page.get_by_role("button", name="Fork from here…").click()
    dialog.locator("input[name=sessionId]").fill("forked")
    dialog.get_by_role("button", name="Fork").click()
    page.locator("h1", has_text="forked").wait_for(timeout=WAIT_MS)
    page.locator(".detail h2", has_text="Event 2 of 2").wait_for(timeout=WAIT_MS)

    page.get_by_role("button", name="Delete…").click()
    page.locator("dialog.confirm").get_by_role("button", name="Delete").click()
    page.locator("h1", has_text="Sessions of").wait_for(timeout=WAIT_MS)
    with httpx.Client(timeout=30) as http:
        sessions = f"{base}/apps/{app}/users/{user}/sessions"
        assert http.get(f"{sessions}/forked").status_code == 404
        source = http.get(f"{sessions}/src").json()
        assert source["labels"] == {"env": "prod", "team": "core"}
        assert len(source["events"]) == 3
    assert not page.errors


def test_a_langgraph_checkpoint_shows_metadata_values_and_writes(page, sqlite_server):
    base = sqlite_server.base_url
    app = _unique("graph")
    thread = f"{base}/apps/{app}/threads/t1/checkpoints/cp-1"
    with httpx.Client(timeout=30) as http:
        put = http.put(
            f"{thread}?checkpointNs=",
            json={
                "checkpoint": {"type": "json", "data": "eyJ2IjogNH0="},
                "metadata": {"source": "loop", "step": 3},
                "channelVersions": {"messages": "1"},
                "newValues": [
                    {"channel": "messages", "version": "1", "type": "json", "data": "WyJoaSJd"}
                ],
            },
        )
        assert put.status_code == 204, put.text
        write = {"taskId": "task-1", "taskPath": "", "idx": 0, "channel": "messages"}
        wrote = http.post(
            f"{thread}/writes?checkpointNs=",
            json={"writes": [{**write, "type": "msgpack", "data": "kqJoaQ=="}]},
        )
        assert wrote.status_code == 204, wrote.text
    page.goto(f"{base}/ui/#/apps/{app}/threads/t1")
    page.locator("article.checkpoint").wait_for(timeout=WAIT_MS)
    text = page.locator("article.checkpoint").inner_text()
    assert '"step": 3' in text and "task task-1" in text and "msgpack" in text
    page.locator("article.checkpoint summary", has_text="messages").first.click()
    page.locator("article.checkpoint pre", has_text='"hi"').wait_for(timeout=WAIT_MS)


def test_the_apps_langgraph_threads_are_listed_and_open_their_checkpoints(page, server):
    base = server.base_url
    app = _unique("graph")
    threads = f"{base}/apps/{app}/threads"
    with httpx.Client(timeout=30) as http:
        for thread, user in [("t-ada", "ada"), ("t-bo", "bo")]:
            put = http.put(
                f"{threads}/{thread}/checkpoints/cp-1?checkpointNs=",
                json={
                    "checkpoint": {"type": "json", "data": "eyJ2IjogNH0="},
                    "metadata": {"source": "loop", "step": 1},
                    "channelVersions": {},
                    "userId": user,
                },
            )
            assert put.status_code == 204, put.text
        # A pending write to t-ada (its channel hostile text), the later write:
        # t-ada is listed first.
        wrote = http.post(
            f"{threads}/t-ada/checkpoints/cp-1/writes?checkpointNs=",
            json={
                "writes": [
                    {"taskId": "task-9", "idx": 0, "channel": XSS, "type": "json", "data": "MQ=="}
                ]
            },
        )
        assert wrote.status_code == 204, wrote.text
    page.goto(f"{base}/ui/#/apps/{app}/threads")
    rows = page.locator("table.list tbody tr")
    rows.nth(1).wait_for(timeout=WAIT_MS)
    assert rows.evaluate_all("rows => rows.map(row => row.dataset.thread)") == ["t-ada", "t-bo"]
    assert "cp-1" in rows.nth(0).inner_text() and "ada" in rows.nth(0).inner_text()
    # Filtered by user: only bo's.
    page.get_by_label("User id").fill("bo")
    page.get_by_role("button", name="Filter").click()
    page.locator("h2", has_text="Threads of bo").wait_for(timeout=WAIT_MS)
    assert rows.evaluate_all("rows => rows.map(row => row.dataset.thread)") == ["t-bo"]
    # Back to every thread, then into t-ada: its checkpoint and pending write.
    page.goto(f"{base}/ui/#/apps/{app}/threads")
    page.locator("table.list tbody tr", has_text="t-ada").get_by_role("link", name="t-ada").click()
    page.locator("article.checkpoint").wait_for(timeout=WAIT_MS)
    text = page.locator("article.checkpoint").inner_text()
    assert "cp-1" in text and "task task-9 #0" in text and XSS in text
    assert page.evaluate("window.__xss") is None
    # Typing an id still opens a thread.
    page.get_by_label("Thread id").fill("t-bo")
    page.get_by_role("button", name="Open thread").click()
    page.locator("h2", has_text="Checkpoints of t-bo").wait_for(timeout=WAIT_MS)
    assert not page.errors


@pytest.fixture(scope="module")
def phone_page(browser) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    yield context.new_page()
    context.close()


def test_a_session_is_readable_at_phone_width(phone_page, sqlite_server):
    url = _seed(sqlite_server.base_url, _unique("phone"), "di", "s")
    phone_page.goto(url)
    phone_page.locator(".detail h2", has_text="Event 3 of 3").wait_for(timeout=WAIT_MS)
    # Nothing wider than the screen: no sideways scrolling.
    assert phone_page.evaluate("document.documentElement.scrollWidth") <= 390


def test_the_session_list_filters_by_label_and_shows_a_state_key_as_title(page, sqlite_server):
    base = sqlite_server.base_url
    app, user = _unique("list"), "ed"
    sessions = f"{base}/apps/{app}/users/{user}/sessions"
    with httpx.Client(timeout=30) as http:
        for name, labels in [("a", {"env": "prod"}), ("b", {"env": "dev"}), ("c", {"env": "prod"})]:
            body = {"sessionId": name, "state": {"title": f"title of {name}"}, "labels": labels}
            assert http.post(sessions, json=body).status_code == 201
    page.goto(f"{base}/ui/#/apps/{app}/users/{user}")
    page.locator("table.list tr[data-session=a]").wait_for(timeout=WAIT_MS)
    assert page.eval_on_selector_all(
        "tr[data-session]", "rows => rows.map(r => r.dataset.session)"
    ) == [
        "c",
        "b",
        "a",
    ]  # newest first
    page.locator("input[name=label]").fill("env:prod")
    page.locator("input[name=title]").fill("title")
    page.get_by_role("button", name="Apply").click()
    page.locator("td.title", has_text="title of c").wait_for(timeout=WAIT_MS)
    shown = page.eval_on_selector_all(
        "tr[data-session]", "rows => rows.map(r => r.dataset.session)"
    )
    assert shown == ["c", "a"]
    assert "label=env%3Aprod" in page.url  # the filter is in the link

    # A session with a chosen id, initial state and labels.
    page.get_by_role("button", name="New session…").click()
    dialog = page.locator("dialog.confirm")
    dialog.locator("input[name=sessionId]").fill("made")
    dialog.locator("textarea[name=state]").fill('{"title": "made here", "user:tz": "UTC"}')
    dialog.locator("textarea[name=labels]").fill("env:prod")
    dialog.get_by_role("button", name="Create").click()
    page.locator("h1", has_text="made").wait_for(timeout=WAIT_MS)
    with httpx.Client(timeout=30) as http:
        made = http.get(f"{sessions}/made").json()
    assert made["state"] == {"title": "made here", "user:tz": "UTC"}
    assert made["labels"] == {"env": "prod"}


def test_the_page_reconnects_by_itself_after_the_server_restarts(browser, tmp_path):
    server = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'restart.db'}").start()
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(_seed(server.base_url, "again", "fay", "s1"))
        page.locator("#live[data-status=live]").wait_for(timeout=WAIT_MS)
        server.stop()
        page.locator("#live[data-status=reconnecting]").wait_for(timeout=WAIT_MS)
        server.start()
        page.locator("#live[data-status=live]").wait_for(timeout=60_000)
        with httpx.Client(timeout=30) as http:
            answer = http.post(
                f"{server.base_url}/apps/again/users/fay/sessions/s1/events",
                json={"author": "planner", "content": {"parts": [{"text": "after the restart"}]}},
            )
            assert answer.status_code == 201
        page.locator(".row", has_text="after the restart").wait_for(timeout=WAIT_MS)
        assert page.locator(".row").count() == 4  # none twice
    finally:
        context.close()
        server.stop()

"""`session-state import` into a database that already holds a session: a
session stored with the same row (state, revision, times) but one event of
other content is a conflict, reported and left alone, not skipped."""

from pathlib import Path

from tests.test_transfer import APP, api, export, import_

SESSION = f"{APP}/users/ada/sessions/trip"


async def test_one_event_of_other_content_is_a_conflict(database_url: str, tmp_path: Path) -> None:
    async with api(database_url) as http:
        created = await http.post(f"{APP}/users/ada/sessions", json={"sessionId": "trip"})
        assert created.status_code == 201
        for step in range(3):
            event = {"id": f"e{step}", "author": "agent", "content": {"parts": [{"text": "as is"}]}}
            assert (await http.post(f"{SESSION}/events", json=event)).status_code == 201
    dump = tmp_path / "dump.jsonl"
    export(database_url, dump)
    lines = dump.read_text().splitlines()
    # The second event's text changed; its session line (state, revision,
    # times) stays exactly what the database holds.
    changed = [index for index, line in enumerate(lines) if '"id":"e1"' in line]
    assert len(changed) == 1 and '"as is"' in lines[changed[0]]
    lines[changed[0]] = lines[changed[0]].replace('"as is"', '"edited"')
    dump.write_text("\n".join(lines) + "\n")

    code, summary, stderr = import_(database_url, dump)

    assert code == 1 and "conflict" in stderr
    assert summary["sessions"] == {"added": 0, "skipped": 0, "conflicts": 1}
    assert summary["events"] == {"added": 0, "skipped": 2, "conflicts": 0}
    assert any("'trip'" in text for text in summary["conflicts"])
    async with api(database_url) as http:
        events = (await http.get(f"{SESSION}/events")).json()["events"]
    texts = [event["content"]["parts"][0]["text"] for event in events]
    assert texts == ["as is"] * 3

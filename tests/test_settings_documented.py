"""Every setting's default and bounds as the code defines them (app/core/config.py)
are the ones docs/configuration.md's settings table and docs/api.md's limits
table print: a default changed in one place only fails here."""

import re
from pathlib import Path
from typing import Any

from annotated_types import Ge, Le

from session_state.core.config import Settings

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_ROW = re.compile(r"^\| `SESSION_STATE_(\w+)` \| (`[^`]*`|\w+)(?: \(([^)]*)\))? \|", re.M)
LIMITS_ROW = re.compile(
    r"^\| `SESSION_STATE_(\w+)` \| ([\d.]+) ?(MiB|KiB)?"
    r"(?: \((?:at least ([\d.]+) ?(MiB|KiB)?|([\d.]+) to ([\d.]+))\b.*?\))?",
    re.M,
)
UNITS = {None: 1, "": 1, "KiB": 1024, "MiB": 1024 * 1024}
UNSET = {"unset": None, "empty": []}


def _default(name: str) -> Any:
    field = Settings.model_fields[name]
    return field.get_default(call_default_factory=True)


def _bound(name: str, kind: type) -> float | None:
    for rule in Settings.model_fields[name].metadata:
        if isinstance(rule, kind):
            return float(rule.ge if isinstance(rule, Ge) else rule.le)  # type: ignore[attr-defined]
    return None


def _as_written(value: str) -> Any:
    if value in UNSET:
        return UNSET[value]
    text = value.strip("`")
    if text == "{}":
        return {}
    return float(text) if re.fullmatch(r"\d+(\.\d+)?", text) else text


def _comparable(value: Any) -> Any:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def test_the_configuration_lists_every_setting_with_its_default_and_upper_bound():
    rows = SETTINGS_ROW.findall((ROOT / "docs" / "configuration.md").read_text())
    documented = {name.lower() for name, _, _ in rows}
    assert documented == set(Settings.model_fields)
    for name, written, note in rows:
        field = name.lower()
        assert _as_written(written) == _comparable(_default(field)), field
        if match := re.fullmatch(r"at most ([\d.]+)", note):
            assert float(match[1]) == _bound(field, Le), field
        elif match := re.fullmatch(r"([\d.]+) (MiB|KiB)", note):
            assert float(match[1]) * UNITS[match[2]] == _default(field), field
        else:
            assert not note, (field, note)


def test_the_api_limits_table_gives_each_limit_its_default_and_bounds():
    rows = LIMITS_ROW.findall((ROOT / "docs" / "api.md").read_text())
    assert {name.lower() for name, *_ in rows} >= {
        "max_body_bytes",
        "max_json_depth",
        "max_key_length",
        "max_state_bytes",
        "max_event_bytes",
        "max_response_bytes",
    }
    for name, number, unit, least, least_unit, low, high in rows:
        field = name.lower()
        assert float(number) * UNITS[unit] == _default(field), field
        if least:
            assert float(least) * UNITS[least_unit] == _bound(field, Ge), field
        if low:
            assert (float(low), float(high)) == (_bound(field, Ge), _bound(field, Le)), field

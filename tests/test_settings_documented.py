"""Every setting's default and bounds as the code defines them (app/core/config/)
are the ones docs/configuration.md's settings tables and docs/api.md's limits
table print: a default changed in one place only fails here. The settings are
grouped by feature in the code (the bases of Settings), and docs/configuration.md
and `serve --help` show them under the same titles in the same order."""

import re
from pathlib import Path
from typing import Any

from annotated_types import Ge, Le

from session_state.cli.main import build_parser
from session_state.core.config import SETTING_GROUPS, Settings, group_of

ROOT = Path(__file__).resolve().parent.parent
CONFIGURATION = ROOT / "docs" / "configuration.md"
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
    rows = SETTINGS_ROW.findall(CONFIGURATION.read_text())
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


def _grouped_as_the_code_does() -> list[tuple[str, list[str]]]:
    return [(group.title, list(group.model_fields)) for group in SETTING_GROUPS]


def test_every_setting_is_in_one_group_and_no_group_hides_another_s_rules():
    grouped = [name for group in SETTING_GROUPS for name in group.model_fields]
    assert sorted(grouped) == sorted(Settings.model_fields)
    assert len({group.title for group in SETTING_GROUPS}) == len(SETTING_GROUPS)
    # Two groups' validators of the same name would leave only one of them.
    for kind in ("field_validators", "model_validators"):
        own = [
            name
            for group in SETTING_GROUPS
            for name in getattr(group.__pydantic_decorators__, kind)
        ]
        assert sorted(own) == sorted(getattr(Settings.__pydantic_decorators__, kind)), kind


def test_the_configuration_shows_each_setting_under_its_group_in_the_code_s_order():
    sections = re.split(r"^## (.+)$", CONFIGURATION.read_text(), flags=re.M)[1:]
    documented = [
        (title, [name.lower() for name, _, _ in SETTINGS_ROW.findall(body)])
        for title, body in zip(sections[::2], sections[1::2], strict=True)
    ]
    # Sections without settings (such as Mistakes) may come between or after.
    assert [section for section in documented if section[1]] == _grouped_as_the_code_does()


def _serve_help() -> str:
    parser = build_parser()
    commands = next(action for action in parser._actions if action.dest == "command")
    return commands.choices["serve"].format_help()


def test_serve_help_shows_each_setting_and_option_under_its_group_in_the_code_s_order():
    # A heading is a line that starts in the first column and ends with a colon.
    sections = re.split(r"^(\S[^\n]*):$", _serve_help(), flags=re.M)[1:]
    shown = {title: body for title, body in zip(sections[::2], sections[1::2], strict=True)}
    titles = [title for title in shown if title not in ("options", "positional arguments")]
    assert titles == [group.title for group in SETTING_GROUPS]
    for title, settings in _grouped_as_the_code_does():
        variables = re.findall(r"^  SESSION_STATE_(\w+) \(default: ", shown[title], re.M)
        assert [name.lower() for name in variables] == settings, title
    # Each option overriding a setting is shown in that setting's group.
    options = re.findall(r"^  --([a-z-]+)", "".join(shown.values()), re.M)
    assert {"host", "port", "workers", "database-url"} <= set(options)
    for title, body in shown.items():
        for option in re.findall(r"^  --([a-z-]+)", body, re.M):
            setting = option.replace("-", "_")
            if setting in Settings.model_fields:
                assert group_of(setting).title == title, option
            else:
                assert title == "options", option

"""`serve --help`'s settings: one argument group per group of settings
(app.core.config), in their order, each listing its variables with their
defaults and meanings, and holding the options that override them.

A pip user has no docs/: the help itself says what every setting does."""

import argparse
import textwrap

from pydantic.fields import FieldInfo

from ..core.config import ENVIRONMENT_PREFIX, SETTING_GROUPS, SettingGroup

DESCRIPTION = (
    "Run the HTTP API.\n\n"
    "Settings are environment variables, shown by group with their defaults and\n"
    "what they do; an option overrides the variable of its setting.\n"
    "docs/configuration.md in the source repository has the same groups with\n"
    "more detail."
)


def add_setting_groups(parser: argparse.ArgumentParser) -> dict[str, argparse._ArgumentGroup]:
    """Adds a group per group of settings; returns, by setting (a field name),
    the argument group its option belongs in."""
    by_setting: dict[str, argparse._ArgumentGroup] = {}
    for group in SETTING_GROUPS:
        arguments = parser.add_argument_group(group.title, description=_described(group))
        by_setting |= dict.fromkeys(group.model_fields, arguments)
    return by_setting


def _described(group: type[SettingGroup]) -> str:
    """Each variable of `group` with its default, then its meaning indented."""
    lines = []
    for name, field in group.model_fields.items():
        lines.append(f"{ENVIRONMENT_PREFIX}{name.upper()} (default: {_shown_default(field)})")
        lines += textwrap.wrap(
            field.description or "",
            width=74,
            initial_indent=" " * 4,
            subsequent_indent=" " * 4,
            break_on_hyphens=False,
        )
    return "\n".join(lines)


def _shown_default(field: FieldInfo) -> str:
    """A default as docs/configuration.md's table writes it."""
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if value == []:
        return "empty"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "{}" if value == {} else str(value)

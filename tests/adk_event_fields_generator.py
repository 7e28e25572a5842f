"""Writes app/transfer/adk_event_fields.py from the installed google-adk:
`python -m tests.adk_event_fields_generator`. tests/test_adk_event_shape.py
fails when the written table is not the one the installed ADK gives.

ADK stores an event as `Event.model_dump(mode="json", exclude_none=True)`
(field names) and sends it as `model_dump(..., by_alias=True)` (JSON names).
The table says, for each model an event holds, which keys a JSON name
replaces and which values hold models in turn; everything else (free-form
objects such as a state delta or a tool's arguments, extra keys of models
that keep them) is kept as it is."""

import json
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any

import google.adk
from google.adk.auth.auth_tool import AuthConfig
from google.adk.events import Event
from google.adk.events.event_actions import EventActions
from pydantic import BaseModel

TARGET = Path(__file__).resolve().parent.parent / "app" / "transfer" / "adk_event_fields.py"

# Declared as dict[str, Any] to avoid an import cycle in ADK; its values are
# AuthConfig models at run time (EventActions validates them into it).
_RUNTIME_TYPES: dict[tuple[type[BaseModel], str], Any] = {
    (EventActions, "requested_auth_configs"): dict[str, AuthConfig]
}

Entry = tuple[str, str | None]


class _Walk:
    def __init__(self) -> None:
        self.models: dict[str, dict[str, Entry]] = {}
        self.classes: dict[str, tuple[type[BaseModel], ...]] = {}

    def model(self, name: str, classes: tuple[type[BaseModel], ...]) -> str:
        known = self.classes.get(name)
        if known is not None:
            if known != classes:
                raise ValueError(f"two models named {name}: {known} and {classes}")
            return name
        self.classes[name] = classes
        fields: dict[str, Entry] = {}
        self.models[name] = fields
        for cls in classes:
            for field_name, info in cls.model_fields.items():
                json_name = info.serialization_alias or info.alias or field_name
                annotation = _RUNTIME_TYPES.get((cls, field_name), info.annotation)
                entry = (json_name, self.child(annotation, f"{name}.{field_name}"))
                if fields.get(field_name, entry) != entry:
                    raise ValueError(f"{name}.{field_name}: {fields[field_name]} or {entry}")
                fields[field_name] = entry
        return name

    def child(self, annotation: Any, where: str) -> str | None:
        """None (kept as is), a model's name, or "{name}" (an object whose
        keys are kept and whose values are that model)."""
        models: list[type[BaseModel]] = []
        mapped: list[type[BaseModel]] = []
        for member in _members(annotation):
            origin = typing.get_origin(member)
            if origin in (list, set, frozenset, tuple):
                for item in typing.get_args(member):
                    if item is not Ellipsis:
                        models.extend(_models(item, where))
            elif origin is dict:
                mapped.extend(_models(typing.get_args(member)[1], where))
            elif isinstance(member, type) and issubclass(member, BaseModel):
                models.append(member)
        if models and mapped:
            raise ValueError(f"{where}: both a model and an object of models")
        chosen = tuple(dict.fromkeys(models or mapped))
        if not chosen:
            return None
        name = chosen[0].__name__ if len(chosen) == 1 else where
        name = self.model(name, chosen)
        return f"{{{name}}}" if mapped else name

    def pruned(self) -> dict[str, dict[str, Entry]]:
        """Only keys that are renamed or lead to one; models left empty go."""
        models = {name: dict(fields) for name, fields in self.models.items()}
        empty: set[str] = set()
        while True:
            for fields in models.values():
                for key, (json_name, child) in list(fields.items()):
                    if child is not None and child.strip("{}") in empty:
                        child = None
                    if child is None and json_name == key:
                        del fields[key]
                    else:
                        fields[key] = (json_name, child)
            empty = {name for name, fields in models.items() if not fields}
            if not empty:
                return models
            for name in empty:
                del models[name]


def _members(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
        return [member for argument in arguments for member in _members(argument)]
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    return [annotation]


def _models(annotation: Any, where: str) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    for member in _members(annotation):
        if typing.get_origin(member) in (list, set, frozenset, tuple, dict):
            raise ValueError(f"{where}: containers of containers are not in the table")
        if isinstance(member, type) and issubclass(member, BaseModel):
            found.append(member)
    return found


def _literal(child: str | None) -> str:
    return "None" if child is None else json.dumps(child)


def table() -> dict[str, dict[str, Entry]]:
    walk = _Walk()
    walk.model("Event", (Event,))
    return walk.pruned()


def render() -> str:
    """The module's text, formatted as `ruff format` formats it."""
    lines = [
        '"""ADK\'s event models: the keys ADK stores under their field names and',
        "sends under their JSON names (`by_alias`), and the values that hold models",
        "in turn. Written by `python -m tests.adk_event_fields_generator` from",
        f"google-adk {google.adk.__version__}; do not edit (tests/test_adk_event_shape.py",
        "fails when the installed ADK gives another table).",
        "",
        "MODELS[model][field name] = (JSON name, what the value holds: None, kept",
        'as it is; "Model", that model or a list of them; "{Model}", an object',
        "whose keys are kept and whose values are that model). Keys a model has",
        'not listed are kept as they are. The event is "Event"."""',
        "",
        "MODELS: dict[str, dict[str, tuple[str, str | None]]] = {",
    ]
    for name, fields in table().items():
        lines.append(f"    {json.dumps(name)}: {{")
        lines.extend(
            f"        {json.dumps(key)}: ({json.dumps(json_name)}, {_literal(child)}),"
            for key, (json_name, child) in fields.items()
        )
        lines.append("    },")
    lines.append("}")
    formatted = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(TARGET), "-"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    return formatted.stdout


if __name__ == "__main__":
    TARGET.write_text(render())
    print(f"wrote {TARGET}")

"""docs/design.md names only what exists, so that it cannot fall behind the
code. Every inline code span of it is read as:

- `app/<path>` (a file or, ending in "/", a folder): it exists;
- `app/<path>.py: Name` or `app/<path>.py: Class.attribute`: the module
  defines it (at its top level; an attribute in the class's body);
- a dotted name, `module.name` or `package.module.Class.method`: the
  longest leading part that ends the dotted path of exactly one module of
  app/ is that module (`sessions.service`, `replica`, `app.main`), and the
  rest is defined in it; a leading part that ends several (`store`,
  `changes`) must be qualified further. A first part that is a class
  defined once in app/ (`ChangeLog.read_changes`) is that class. A first
  part that is nothing of app/ (`json.dumps`, `session_state_client.adk`) is
  another project's, not checked;
- another path with a "/" (`tests/...`, `bench/...`, `client/...`): it
  exists in the repository; a bare `*.py` file name: some file has it.
"""

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app"
DESIGN = ROOT / "docs" / "design.md"

_SPAN = re.compile(r"`([^`\n]+)`")
_FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_APP_PATH = re.compile(r"^app/(?P<path>[\w/]*?)(?P<file>\.py)?/?(?:: (?P<name>\w+(?:\.\w+)?))?$")
_DOTTED = re.compile(r"^\w+(?:\.\w+)+$")
_OTHER_PATH = re.compile(r"^[\w.\-]+/[\w./\-]*$")
_FILE_NAME = re.compile(r"^\w+\.py$")


def spans(text: str) -> list[str]:
    """The inline code spans outside fenced blocks."""
    return _SPAN.findall(_FENCED.sub("", text))


@cache
def modules() -> dict[str, Path]:
    """Every module of app/ by its dotted path (`app.sessions.service`)."""
    found = {}
    for path in APP.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


@cache
def definitions(path: Path) -> dict[str, set[str] | None]:
    """The module's top-level names: a class's with the names of its body,
    anything else with None."""
    names: dict[str, set[str] | None] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = {target for item in node.body for target in _defined_by(item)}
        else:
            for target in _defined_by(node):
                names[target] = None
    return names


def _defined_by(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [target.id for target in node.targets if isinstance(target, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def defines(path: Path, dotted: str) -> bool:
    name, _, attribute = dotted.partition(".")
    names = definitions(path)
    if name not in names:
        return False
    if not attribute:
        return True
    members = names[name]
    return members is not None and attribute.partition(".")[0] in members


def modules_ending_with(parts: list[str]) -> list[str]:
    return [
        module
        for module in modules()
        if module.split(".")[-len(parts) :] == parts
        and (module == "app" or len(module.split(".")) >= len(parts))
    ]


def classes_named(name: str) -> list[Path]:
    return [path for path in modules().values() if isinstance(definitions(path).get(name), set)]


def problem_of(span: str) -> str | None:
    """What is wrong with the span's name; None when it exists or is none of ours."""
    span = span.strip()
    if span.startswith("app/"):
        match = _APP_PATH.match(span)
        if match is None:
            return "an app/ path written in no form this test reads"
        path = ROOT / (span.partition(":")[0])
        if not path.exists():
            return "no such file or folder"
        if match["name"] and not defines(path, match["name"]):
            return f"{path.relative_to(ROOT)} defines no {match['name']}"
        return None
    if _FILE_NAME.match(span):
        found = any(ROOT.glob(f"**/{span}"))
        return None if found else "no file of that name"
    if _OTHER_PATH.match(span) and not span.startswith(("http", "/")):
        return None if (ROOT / span).exists() else "no such path in the repository"
    if _DOTTED.match(span):
        parts = span.split(".")
        for length in range(len(parts), 0, -1):
            candidates = modules_ending_with(parts[:length])
            if len(candidates) > 1:
                return f"{'.'.join(parts[:length])} is several modules: {sorted(candidates)}"
            if candidates:
                rest = ".".join(parts[length:])
                path = modules()[candidates[0]]
                if rest and not defines(path, rest):
                    return f"{candidates[0]} defines no {rest}"
                return None
        classes = classes_named(parts[0])
        if len(classes) == 1 and not defines(classes[0], ".".join(parts[:2])):
            return f"{parts[0]} has no {parts[1]}"
        return None
    return None


def test_spans_are_read_as_the_docstring_says() -> None:
    assert problem_of("app/sessions/service.py") is None
    assert problem_of("app/sessions/") is None
    assert problem_of("app/sessions/service.py: SessionService") is None
    assert problem_of("app/sessions/service.py: SessionService.create_session") is None
    assert problem_of("sessions.service.SessionService.create_session") is None
    assert problem_of("replica.ReadRouting") is None
    assert problem_of("app.main.create_app") is None
    assert problem_of("ChangeLog.read_changes") is None
    assert problem_of("json.dumps") is None
    assert problem_of("tests/test_design_names.py") is None
    assert problem_of("app/sessions/nowhere.py") == "no such file or folder"
    assert problem_of("app/sessions/service.py: Nothing") == (
        "app/sessions/service.py defines no Nothing"
    )
    assert problem_of("sessions.service.nothing") == "app.sessions.service defines no nothing"
    assert problem_of("changes.Change") is not None  # sessions' or streams'?
    assert problem_of("ChangeLog.nothing") == "ChangeLog has no nothing"
    assert problem_of("tests/nowhere.py") == "no such path in the repository"
    assert problem_of("nowhere_at_all.py") == "no file of that name"


def test_every_name_the_design_writes_exists() -> None:
    wrong = {
        span: problem
        for span in spans(DESIGN.read_text())
        if (problem := problem_of(span)) is not None
    }
    assert not wrong, "docs/design.md names what does not exist:\n" + "\n".join(
        f"  `{span}`: {problem}" for span, problem in sorted(wrong.items())
    )

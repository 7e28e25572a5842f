"""The server stays readable in pieces: no module of app/ over 800 lines and
no class over 400 (docs/design.md, "Layers"). A module or class that grows
past them is split by job, as the stores and the session rules were."""

import ast
from pathlib import Path

APP = Path(__file__).parent.parent / "app"
MAX_MODULE_LINES = 800
MAX_CLASS_LINES = 400


def test_no_module_of_the_server_is_over_800_lines() -> None:
    too_long = {
        str(path.relative_to(APP)): lines
        for path in sorted(APP.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines: {too_long}"


def test_no_class_of_the_server_is_over_400_lines() -> None:
    too_long = {
        f"{path.relative_to(APP)}:{node.name}": lines
        for path in sorted(APP.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
        and (lines := (node.end_lineno or node.lineno) - node.lineno + 1) > MAX_CLASS_LINES
    }
    assert not too_long, f"classes over {MAX_CLASS_LINES} lines: {too_long}"

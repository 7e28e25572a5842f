"""The operator's commands reach storage only through `OperatorStore`
(docs/design.md): nothing in them imports SQLAlchemy, the tables or a
repository. The ADK reader is the one exception: it reads ADK's tables. The
transfer package's repositories are the storage side, reached through
OperatorStore (app/admin/sql_store.py)."""

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parent.parent / "app"
DRIVERS = ("sqlalchemy", "asyncpg")
# The SQL behind OperatorStore (SqlOperatorStore's) is no command of its own.
OPERATOR_STORE_SQL = ("repository.py", "langgraph_repository.py")
MODULES = sorted(
    path
    for path in [*APP.joinpath("transfer").glob("*.py"), APP / "admin" / "commands.py"]
    if path.name != "adk_source.py" and path.name not in OPERATOR_STORE_SQL
)


def imported_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}".lstrip(".") for alias in node.names)
    return names


def reaches_past_the_interface(name: str) -> bool:
    parts = name.split(".")
    return parts[0] in DRIVERS or any(
        part == "tables" or part.endswith(("repository", "statements")) for part in parts
    )


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_operator_commands_use_only_the_storage_interface(path: Path) -> None:
    reaching = sorted(filter(reaches_past_the_interface, imported_names(path)))
    assert reaching == [], f"{path.name} reaches past OperatorStore: {reaching}"

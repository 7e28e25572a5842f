"""The wheel's packages, found rather than listed: every folder of app/ and
migrations/ (with or without an __init__.py) is installed under
session_state, so that a new package cannot be left out of what users
install. Everything else is in pyproject.toml; setuptools' own discovery
cannot rename app to session_state, hence this file."""

from pathlib import Path

from setuptools import find_namespace_packages, setup

HERE = Path(__file__).parent


def packages(folder: str, name: str) -> list[str]:
    found = find_namespace_packages(HERE / folder, exclude=["__pycache__", "*.__pycache__"])
    return [name, *(f"{name}.{package}" for package in found)]


setup(
    packages=packages("app", "session_state") + packages("migrations", "session_state.migrations")
)

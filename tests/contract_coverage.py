"""What each contract suite's test_the_suite.py checks of itself: every
method of its protocols is called by one of its tests."""

import inspect
from pathlib import Path


def protocol_methods(*protocols: type) -> list[str]:
    """The public methods of the protocols, as `Protocol.method`."""
    return [
        f"{protocol.__name__}.{name}"
        for protocol in protocols
        for name, _ in inspect.getmembers(protocol, inspect.isfunction)
        if not name.startswith("_")
    ]


def suite_sources(suite: Path) -> str:
    """The text of the suite's modules: its tests and the helpers they call
    the protocol through (scenes.py)."""
    return "\n".join(path.read_text() for path in sorted(suite.glob("*.py")))


def is_called(method: str, sources: str) -> bool:
    """Whether `Protocol.method` is called in the sources, as `.method(`."""
    return f".{method.rsplit('.', 1)[1]}(" in sources

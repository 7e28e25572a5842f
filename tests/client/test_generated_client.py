"""The sync client is generated from the async one (client/tools/unasync.py):
the committed module must be what the generator writes, byte for byte."""

import difflib
import importlib.util
import io
import tokenize
from pathlib import Path
from types import ModuleType

import pytest

GENERATOR = Path(__file__).resolve().parents[2] / "client" / "tools" / "unasync.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("unasync", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_sync_client_is_what_the_generator_writes():
    unasync = _generator()
    committed = unasync.TARGET.read_text()
    expected = unasync.generate()
    diff = "".join(
        difflib.unified_diff(
            committed.splitlines(keepends=True),
            expected.splitlines(keepends=True),
            "committed",
            "generated",
        )
    )
    assert committed == expected, (
        "_sync_client.py is not what client/tools/unasync.py writes from _async_client.py "
        f"(run `python client/tools/unasync.py`):\n{diff}"
    )


def test_a_changed_async_client_changes_the_sync_client():
    """The comparison above can fail: an edit of the source shows in the output."""
    unasync = _generator()
    source = unasync.SOURCE.read_text()
    edited = source.replace("The user's memories best matching", "The memories best matching")
    assert edited != source
    assert unasync.generate(edited) != unasync.TARGET.read_text()


def test_a_passage_the_source_no_longer_has_stops_the_generator():
    unasync = _generator()
    source = unasync.SOURCE.read_text()
    edited = source.replace("(transport: aiohttp)", "(over aiohttp)")
    with pytest.raises(SystemExit, match="passage found 0 times"):
        unasync.generate(edited)


def test_nothing_asynchronous_is_left_in_the_sync_client():
    generated = _generator().TARGET.read_text()
    names = {
        token.string
        for token in tokenize.generate_tokens(io.StringIO(generated).readline)
        if token.type == tokenize.NAME
    }
    asynchronous = {"async", "await", "asyncio", "aiohttp", "AsyncIterator", "aclose"}
    assert names & asynchronous == set()

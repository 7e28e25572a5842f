"""The `export` and `import` commands: files, progress and summaries around
the exporter and the importer."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import IO, Any, TextIO

from tqdm import tqdm

from ..admin.commands import name_option
from ..admin.sql_store import opened_operator_store
from ..core.audit import AuditDetail, audit_event
from ..core.config import Settings
from ..core.errors import SetupProblem
from ..core.limits import Limits
from ..encryption.sealed_transfer import sealed_operator_store
from ..encryption.sealing import Sealer
from .adk_source import opened_adk_source
from .dump_format import MAX_LINE_BYTES, DumpError
from .exporter import Exporter, ExportError
from .importer import Importer, ImportSummary, parsed


@contextlib.asynccontextmanager
async def _opened_store(settings: Settings, *, create: bool) -> AsyncIterator[Any]:
    """The operator store, sealing what an import writes and opening what an
    export reads (encryption at rest: a dump holds plaintext)."""
    sealer = Sealer(settings.value_cipher(), settings.memory_search_when_encrypted)
    async with opened_operator_store(settings, create=create) as store:
        yield sealed_operator_store(store, sealer)


def _progress(description: str) -> tqdm[Any]:
    # On a terminal only (disable=None): a pipe or a log gets the summary alone.
    return tqdm(desc=description, unit=" events", file=sys.stderr, disable=None, leave=False)


async def export(settings: Settings, arguments: argparse.Namespace) -> int:
    app_name = name_option("--app", arguments.app)
    user_id = name_option("--user", arguments.user)
    output: Path | None = arguments.output
    async with _opened_store(settings, create=False) as store:
        with _opened_for_writing(output) as out, _progress("exported") as progress:
            try:
                counts = await Exporter(
                    store,
                    out,
                    app_name,
                    user_id,
                    now=time.time(),
                    on_events=progress.update,
                ).run()
            except BrokenPipeError:
                # `export | head`: the reader left. Nothing more can be written
                # to stdout, at exit either.
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                print("session-state: the output was closed before the dump ended", file=sys.stderr)
                audit_event("export", "output_closed", app=app_name, user=user_id)
                return 1
            except ExportError as error:
                print(f"session-state: {error}", file=sys.stderr)
                audit_event("export", "failed", app=app_name, user=user_id)
                return 1
    # The dump may be on stdout: the summary goes to stderr.
    print(json.dumps({"exported": counts.as_dict()}), file=sys.stderr)
    details: dict[str, AuditDetail] = {
        "app": app_name,
        "user": user_id,
        "output": str(output) if output is not None else "stdout",
        **counts.as_dict(),
    }
    audit_event("export", "ok", **details)
    return 0


@contextlib.contextmanager
def _opened_for_writing(output: Path | None) -> Iterator[TextIO]:
    if output is None:
        yield sys.stdout
        return
    try:
        with output.open("w", encoding="utf-8") as out:
            yield out
    except OSError as error:
        raise SetupProblem(f"cannot write {output}: {error.strerror}") from None


async def import_dump(settings: Settings, arguments: argparse.Namespace) -> int:
    path: Path = arguments.file
    async with _opened_store(settings, create=True) as store:
        importer = Importer(store, Limits.from_settings(settings))
        with _opened_for_reading(path) as source, _progress("imported") as progress:
            importer.on_events = progress.update
            try:
                await importer.run(parsed(_numbered_lines(source)))
            except DumpError as error:
                print(json.dumps({"imported": importer.summary.as_dict()}))
                print(f"session-state: {path}: {error}", file=sys.stderr)
                _audit_import("import", "failed", importer.summary, source=str(path))
                return 1
    _audit_import("import", "ok", importer.summary, source=str(path))
    return _report(importer.summary)


def _audit_import(action: str, outcome: str, summary: ImportSummary, **where: str | None) -> None:
    """Counts of what was added, skipped and in conflict, never content;
    `outcome` "conflicts" when some were left as stored."""
    if outcome == "ok" and summary.conflict_count:
        outcome = "conflicts"
    counts: dict[str, AuditDetail] = {
        f"{name}_{kind}": count
        for name, outcome_counts in vars(summary).items()
        if not isinstance(outcome_counts, list)
        for kind, count in vars(outcome_counts).items()
    }
    audit_event(action, outcome, **where, **counts)


def _report(summary: ImportSummary, refused: list[str] | None = None) -> int:
    print(json.dumps({"imported": summary.as_dict() | ({"refused": refused} if refused else {})}))
    if refused:
        print(
            f"session-state: {len(refused)} refused, sessions or scopes with identifiers or values "
            'the API does not store (the summary\'s "refused" names them)',
            file=sys.stderr,
        )
    if summary.conflict_count:
        print(
            f"session-state: {summary.conflict_count} conflicting, stored with other content and "
            'left as they are (the summary\'s "conflicts" names them)',
            file=sys.stderr,
        )
        return 1
    return 1 if refused else 0


async def import_adk(settings: Settings, arguments: argparse.Namespace) -> int:
    app_name = name_option("--app", arguments.app)
    async with (
        opened_adk_source(arguments.from_url, app_name) as source,
        _opened_store(settings, create=True) as store,
    ):
        importer = Importer(store, Limits.from_settings(settings))
        with _progress("imported") as progress:
            importer.on_events = progress.update
            try:
                await importer.run(source.lines(), needs_end=False)
            except DumpError as error:
                print(json.dumps({"imported": importer.summary.as_dict()}))
                print(f"session-state: --from: {error}", file=sys.stderr)
                _audit_import("import_adk", "failed", importer.summary, app=app_name)
                return 1
    _audit_import("import_adk", "ok", importer.summary, app=app_name)
    return _report(importer.summary, source.refused)


@contextlib.contextmanager
def _opened_for_reading(path: Path) -> Iterator[IO[bytes]]:
    if str(path) == "-":
        yield sys.stdin.buffer
        return
    try:
        with path.open("rb") as source:
            yield source
    except OSError as error:
        raise SetupProblem(f"cannot read {path}: {error.strerror}") from None


def _numbered_lines(source: IO[bytes]) -> Iterator[tuple[int, str]]:
    """The file's lines, numbered from 1, each read with a bound: a line
    longer than any a dump holds is refused before it is read whole."""
    number = 0
    while line := source.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(line) > MAX_LINE_BYTES:
            raise DumpError(f"line {number}: longer than {MAX_LINE_BYTES} bytes")
        try:
            yield number, line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DumpError(f"line {number}: not UTF-8 ({error.reason})") from None

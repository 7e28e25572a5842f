"""`session-state reencrypt`, as the command line runs it: the walk with a
progress bar per table on stderr, and what it did as JSON on stdout."""

import json
import sys
import time
from collections.abc import Callable
from typing import Any

from ..core.config import Settings
from ..core.errors import SetupProblem
from ..db import migrations
from ..db.engine import create_engine
from .reencrypt import reencrypt


async def run_reencrypt(settings: Settings, batch_rows: int) -> int:
    """0 when every row is under the current key; 1 when some changed under
    every try (run it again)."""
    from tqdm import tqdm

    cipher = settings.value_cipher()
    if cipher is None:
        raise SetupProblem(
            "SESSION_STATE_ENCRYPTION_KEYS is empty: there is no key to encrypt with"
        )
    engine = create_engine(settings)
    bars: list[Any] = []

    def progress(table: str, total: int | None) -> Callable[[int], None]:
        bar = tqdm(total=total, desc=table, unit=" rows", file=sys.stderr, disable=None)
        bars.append(bar)

        def advance(rows: int) -> None:
            bar.update(rows)

        return advance

    started = time.monotonic()
    try:
        await migrations.require_current_schema(engine)
        done = await reencrypt(
            engine,
            cipher,
            clear_keyword_index=settings.memory_search_when_encrypted != "full",
            progress=progress,
            batch_rows=batch_rows,
        )
    finally:
        for bar in bars:
            bar.close()
        await engine.dispose()
    report = {
        "keyId": done.key_id,
        "tables": {
            name: {"read": count.read, "resealed": count.resealed, "busy": count.busy}
            for name, count in done.tables.items()
        },
        "seconds": round(time.monotonic() - started, 3),
    }
    print(json.dumps(report, indent=2))
    return 1 if done.busy else 0

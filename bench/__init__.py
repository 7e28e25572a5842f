"""Benchmarks: session-state against ADK's DatabaseSessionService and the
minimal asyncpg transaction, side by side on one PostgreSQL."""

import os
from pathlib import Path

# Where every benchmark writes its figures: bench/results (the committed full
# runs), or the folder BENCH_RESULTS names (bench.quick's uncommitted one).
RESULTS = Path(os.environ.get("BENCH_RESULTS") or Path(__file__).parent / "results")

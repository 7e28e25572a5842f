"""The concurrency and contract suites pass with encryption at rest on: the
same tests, run by pytest with `--encrypted` (a fresh key in
SESSION_STATE_ENCRYPTION_KEYS for every Settings, store and server they
start), in a process of their own. The LangGraph contract suites run with
and without a cipher in the default run (their `cipher` fixture)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENCRYPTED_SUITES = (
    "tests/test_concurrency.py",
    "tests/store_contract",
    "tests/operator_contract",
)


@pytest.mark.timeout(1800)
def test_the_concurrency_and_contract_suites_pass_encrypted(tmp_path):
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--encrypted",
            "-n",
            "0",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--basetemp={tmp_path / 'encrypted'}",
            *ENCRYPTED_SUITES,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    # The suites ran: a test that collects nothing also exits 0 under -q.
    assert re.search(r"\b\d+ passed", summary), summary
    assert not re.search(r"\b\d+ (failed|errors?)\b", summary), summary

"""`session-state <command>` run inside the test process, as a user's shell
would see it: exit code, stdout and stderr, with only the environment and
working directory given. A new interpreter per command costs about a second
of CPU in imports alone, which made the CLI's tests a third of the suite's
time; tests/test_cli.py still runs the installed console script and `serve`
in processes of their own."""

import contextlib
import io
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from session_state.cli.main import main

# os.environ and the working directory are the process's: one command at a time.
_ONE_AT_A_TIME = threading.Lock()


@contextlib.contextmanager
def _environment(variables: Mapping[str, str], cwd: Path | None) -> Iterator[None]:
    saved_environment = dict(os.environ)
    saved_directory = os.getcwd()
    # main() quiets stray thread errors once it has reported a setup problem.
    saved_excepthook = threading.excepthook
    os.environ.clear()
    os.environ.update(variables)
    try:
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        threading.excepthook = saved_excepthook
        os.chdir(saved_directory)
        os.environ.clear()
        os.environ.update(saved_environment)


def _main(arguments: list[str]) -> int:
    """main()'s exit code, as the interpreter would turn it into one: an
    uncaught exception prints its traceback and exits 1."""
    try:
        return main(arguments)
    except SystemExit as exit_:
        code = exit_.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except Exception:
        traceback.print_exc()
        return 1


def run_cli(
    *arguments: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    keep_environment: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Runs the command with the test process's environment minus every
    SESSION_STATE_* variable (unless `keep_environment` is False: then with
    `env` alone), plus `env`."""
    base = (
        {k: v for k, v in os.environ.items() if not k.upper().startswith("SESSION_STATE_")}
        if keep_environment
        else {}
    )
    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        _ONE_AT_A_TIME,
        _environment({**base, **(env or {})}, cwd),
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
        # The commands run their own event loop (asyncio.run): in a thread of
        # their own, so that async tests may call this too.
        ThreadPoolExecutor(max_workers=1) as executor,
    ):
        code = executor.submit(_main, list(arguments)).result()
    return subprocess.CompletedProcess(
        ["session-state", *arguments], code, stdout.getvalue(), stderr.getvalue()
    )

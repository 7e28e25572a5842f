"""`python -m session_state.cli`, the same as the `session-state` command."""

import sys

from .main import main

sys.exit(main())

"""Where a run reports its progress: the CLI puts a watcher here (conformance/cli/progress.py) for
the length of a command; `run_check` hands it the machine and the checker. None: nobody watches."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

WATCHER: ContextVar[Any] = ContextVar("groupcheck_progress_watcher", default=None)

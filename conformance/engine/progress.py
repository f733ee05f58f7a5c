"""Where a run reports its progress: the CLI puts a watcher here (conformance/cli/progress.py) for
the length of a command; `run_check` hands it the machine and the checker. None: nobody watches."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

WATCHER: ContextVar[Any] = ContextVar("groupcheck_progress_watcher", default=None)


def watched(checker: Any) -> Any:
    """``checker``, reporting each check to the watcher if there is one (explore's transitions)."""
    watcher = WATCHER.get()
    return checker if watcher is None else watcher.watch_checker(checker)

"""Bounded argument types and the last-resort error handler of the command line (docs/hostile-input.md).

Command-line numbers drive loops (examples, depth, restarts, runs) and deadlines (budgets, pace),
so each is parsed with its range (`conformance.strict.integer` and `number`): ``--depth -1`` or
``--budget nan`` is a usage error (exit 2) naming the option, before anything runs. `unexpected` turns an exception nobody anticipated into the one
line the CLI promises (exit 2) and keeps the traceback in a log file for whoever reports it.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import traceback
from pathlib import Path
from typing import Any

from conformance.strict import integer, number

__all__ = ["integer", "number", "preflight", "unexpected"]


def unexpected(exc: BaseException, argv: Any, args: argparse.Namespace | None) -> str:
    """The one line for an exception nobody anticipated; the traceback goes to a log file in the
    run's report directory (``--report-dir`` or ``--out``) when it can be written, else in the
    system's temporary directory."""
    what = args.command if args is not None and getattr(args, "command", None) else "groupcheck"
    detail = str(exc).splitlines()[0][:200] if str(exc) else ""
    text = f"groupcheck {' '.join(map(str, argv or []))}\n\n" + "".join(traceback.format_exception(exc))
    log = _write_log(text, args)
    where = f"traceback in {log}" if log is not None else "no log file could be written"
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{what}: cannot use {exc.filename}: {exc.strerror or detail} ({where})"
    return f"{what}: unexpected {type(exc).__name__}{': ' + detail if detail else ''} ({where})"


def preflight(args: argparse.Namespace) -> None:
    """Directories and files the run will write are writable, before the run starts (a usage error
    naming the option otherwise): ``--report-dir`` is created, ``--output``'s directory must be."""
    from conformance.errors import UsageError

    for name, is_dir in (("report_dir", True), ("output", False)):
        path = getattr(args, name, None)
        if not isinstance(path, Path):
            continue
        directory = path if is_dir else path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(
                f"--{name.replace('_', '-')} {path}: cannot create {directory}: {exc.strerror}"
            ) from None
        if not os.access(directory, os.W_OK):
            raise UsageError(f"--{name.replace('_', '-')} {path}: {directory} is not writable")


def _write_log(text: str, args: argparse.Namespace | None) -> Path | None:
    for name in ("report_dir", "out"):
        directory = getattr(args, name, None) if args is not None else None
        if isinstance(directory, Path) and directory.is_dir() and os.access(directory, os.W_OK):
            path = directory / "groupcheck-error.log"
            try:
                path.write_text(text, encoding="utf-8")
                return path
            except OSError:
                break
    try:
        fd, name = tempfile.mkstemp(prefix="groupcheck-error-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return Path(name)
    except OSError:
        return None

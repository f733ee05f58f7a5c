"""A live progress line for long commands (check, explore, mutants, pipeline), drawn with rich on
standard error: examples done, steps, findings, elapsed time. It is drawn only when both standard
output and standard error are terminals and CI is unset, so logs and pipes never see it."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from conformance.engine.progress import WATCHER


def enabled(out: Any = None, err: Any = None) -> bool:
    out, err = out or sys.stdout, err or sys.stderr
    if os.environ.get("CI") or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(out, "isatty", lambda: False)() and getattr(err, "isatty", lambda: False)())


class Watcher:
    """Counts what `run_check` reports (conformance/engine/run.py) into one rich task."""

    def __init__(self, bar: Any, task: Any) -> None:
        self.bar, self.task = bar, task
        self.examples = self.steps = self.findings = self.total = 0

    def _show(self) -> None:
        self.bar.update(
            self.task,
            completed=self.examples,
            examples=self.examples,
            steps=self.steps,
            findings=self.findings,
        )

    def example(self) -> None:
        self.examples += 1
        self._show()

    def step(self, found: int) -> None:
        self.steps += 1
        self.findings += found
        if found or self.steps % 25 == 0:
            self._show()

    def watch(self, machine: type, checker: Any, total: int) -> type:
        """``machine`` counting its examples, ``checker`` counting steps and findings."""
        watcher = self
        self.total += total
        self.bar.update(self.task, total=self.total)

        class Watched(machine):  # type: ignore[misc, valid-type]
            def __init__(self) -> None:
                super().__init__()
                watcher.example()

        Watched.__name__ = Watched.__qualname__ = machine.__name__
        self.watch_checker(checker)
        return Watched

    def watch_checker(self, checker: Any) -> Any:
        """``checker`` counting steps (explore: transitions) and findings."""
        check = checker.check

        def counted(obs: Any, step: int) -> Any:
            found = check(obs, step)
            self.step(len(found))
            return found

        checker.check = counted
        return checker


@contextlib.contextmanager
def progress(title: str, *, console: Any = None) -> Iterator[Watcher | None]:
    """A progress line for the block (None when it is not drawn); runs inside report to it."""
    if console is None and not enabled():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn(
            "examples {task.fields[examples]}  steps {task.fields[steps]}  findings {task.fields[findings]}"
        ),
        TimeElapsedColumn(),
        console=console or Console(stderr=True),
        transient=True,
    )
    with bar:
        task = bar.add_task(title, total=0, examples=0, steps=0, findings=0)
        watcher = Watcher(bar, task)
        token = WATCHER.set(watcher)
        try:
            yield watcher
        finally:
            WATCHER.reset(token)

"""The live progress line counts examples, steps and findings of a run, and is never drawn when
output is not a terminal (pipes, files, CI logs)."""

from __future__ import annotations

import io

import pytest

from conformance.cli.progress import enabled, progress
from conformance.engine.profiles import get_profile
from conformance.engine.run import run_check


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_counts_what_the_run_did() -> None:
    from rich.console import Console

    screen = _Tty()
    with progress("check", console=Console(file=screen, force_terminal=True, width=120)) as watcher:
        assert watcher is not None
        result = run_check("classic", profile=get_profile("dev"), max_examples=5, seed_value=0)
    assert result.verdict in ("PASSED", "INCONCLUSIVE")
    assert watcher.examples >= 5 and watcher.total == 5
    assert watcher.steps >= watcher.examples  # every example takes steps, each checked
    assert watcher.findings == 0
    assert "examples" in screen.getvalue()


def test_finds_are_counted() -> None:
    from rich.console import Console

    with progress("check", console=Console(file=_Tty(), force_terminal=True)) as watcher:
        result = run_check(
            "classic",
            profile=get_profile("dev"),
            max_examples=50,
            seed_value=0,
            variants={"mutant": "kafka-8500"},
        )
    assert result.violations and watcher is not None and watcher.findings >= 1


def test_off_when_output_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert enabled(_Tty(), _Tty())
    assert not enabled(io.StringIO(), _Tty())
    assert not enabled(_Tty(), io.StringIO())
    monkeypatch.setenv("CI", "true")
    assert not enabled(_Tty(), _Tty())
    with progress("check") as watcher:  # pytest captures output: no terminal here
        assert watcher is None


def test_explore_counts_its_transitions() -> None:
    from rich.console import Console

    from conformance.protocols.classic.explore import explore_classic

    with progress("explore", console=Console(file=_Tty(), force_terminal=True)) as watcher:
        result = explore_classic(2, 2, depth=4, budget_s=30)
    assert watcher is not None and watcher.steps >= result.states - 1  # every new state was checked
    assert watcher.findings >= len(result.found)  # each invariant found was a finding at least once

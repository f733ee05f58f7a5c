"""The classic oracle's candidate enumeration: every timing before any extra choice script.

A group with many choice points (leader elections, generated ids) has more scripts than the bound;
the bound must then fall on scripts, never on the timings (how many due timers fired before the
operation), or a target that completed a join round on a due timer diverges from every hypothesis.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from conformance.protocols.classic.candidates import CANDIDATES, ClassicCandidates

OPTIONS = tuple(f"m{i}" for i in range(8))
H = SimpleNamespace(state=None)  # a hypothesis with no group the periodic cleanup could delete


class Enumerator(ClassicCandidates):
    """`_candidates` over a stand-in `_run`: ``before`` timers are due before the operation, none
    after it, and every run meets three choice points of eight options."""

    def __init__(self, before: int) -> None:
        self.before = before
        self.chooser = SimpleNamespace(log=[])
        self.coordinator = SimpleNamespace(deletable_groups=lambda state: [])

    def _run(self, h: Any, t: int, op: Any, k: int, j: int, script: tuple[int, ...]) -> Any:
        if k > self.before or j > 0:
            return None
        self.chooser.log = [("leader", OPTIONS, script[i] if i < len(script) else 0) for i in range(3)]
        return (k, j, script), self.before, 0


def test_every_timing_is_a_candidate_although_scripts_exceed_the_bound() -> None:
    port = Enumerator(before=3)
    out = port._candidates(H, 0, ("advance",))
    timings = {k for k, _j, _s in out}
    assert timings == {0, 1, 2, 3}
    assert all((k, 0, ()) in out for k in range(4))
    assert len(out) == CANDIDATES


def test_scripts_left_untried_are_counted() -> None:
    port = Enumerator(before=1)
    out = port._candidates(H, 0, ("advance",))
    assert len(out) == CANDIDATES
    assert port.candidates_cut > 0
    small = Enumerator(before=0)
    small.chooser = SimpleNamespace(log=[])
    small._run = lambda h, t, op, k, j, script: None if k or j else ((k, j, script), 0, 0)  # type: ignore[method-assign]
    assert small._candidates(H, 0, ("advance",)) == [(0, 0, ())]
    assert small.candidates_cut == 0


def test_scripts_are_tried_breadth_first_across_timings() -> None:
    port = Enumerator(before=1)
    out = port._candidates(H, 0, ("advance",))
    # the first alternative script of each timing comes before any second-level script
    assert (0, 0, (1,)) in out and (1, 0, (1,)) in out

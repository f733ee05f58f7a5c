"""The consumer explorer's copy (`conformance.protocols.consumer.clone`) behaves like the deep copy
it replaced (`deep_clone`: `copy.deepcopy` sharing only the frozen world snapshot)."""

from __future__ import annotations

import random

from conformance.protocols.consumer import explore as cx
from conformance.protocols.consumer.clone import _known, clone, deep_clone
from conformance.protocols.consumer.trace import action_of


def _same_future(a: object, b: object) -> None:
    assert cx.consumer_key(a, symmetry=False) == cx.consumer_key(b, symmetry=False)
    for x in (a, b):
        assert x.chooser is not x.port.coordinator.chooser  # type: ignore[attr-defined]
    assert a.chooser.state() == b.chooser.state()  # type: ignore[attr-defined]
    assert a.port.records == b.port.records  # type: ignore[attr-defined]
    assert a.reports == b.reports  # type: ignore[attr-defined]


def test_the_explored_simulators_take_the_fast_copy() -> None:
    """A field added to the simulator, its port or its clients must be taught to `clone`: an
    unknown one sends every copy down `deep_clone`, several times slower (same states, so no other
    test notices)."""
    for members, partitions, ops, static in ((1, 1, cx.CONSUMER_OPS, 0), (2, 2, cx.ALL_CONSUMER_OPS, 1)):
        sim = cx._fresh(cx.consumer_setup(members, partitions, ops, static), {})
        assert _known(sim)
        for op in cx._enabled(sim, ops)[:3]:
            sim.replay([action_of(op, "test")])
        assert _known(sim) and _known(clone(sim))


def test_clone_behaves_like_deepcopy() -> None:
    setup = cx.consumer_setup(2, 2, cx.ALL_CONSUMER_OPS)
    rng = random.Random(11)
    for _ in range(10):
        sim = cx._fresh(setup, {})
        for _ in range(rng.randrange(5, 40)):
            op = rng.choice(cx._enabled(sim, cx.ALL_CONSUMER_OPS))
            a, d = clone(sim), deep_clone(sim)
            assert a.log == [] and a.actions == []
            outcomes = [[o.event for o in s.replay([action_of(op, "test")])] for s in (a, d, sim)]
            assert outcomes[0] == outcomes[1] == outcomes[2]
            _same_future(a, sim)
            _same_future(d, sim)


def test_clone_leaves_the_original_alone() -> None:
    sim = cx._fresh(cx.consumer_setup(2, 1), {})
    for op in ({"op": "client_step", "name": "c1"}, {"op": "client_step", "name": "c2"}):
        sim.replay([action_of(op, "test")])
    before = cx.consumer_key(sim, symmetry=False)
    state = sim.chooser.state()
    child = clone(sim)
    for op in (
        {"op": "client_step", "name": "c1"},
        {"op": "advance", "ms": 3000},
        {"op": "client_step", "name": "c2"},
    ):
        child.replay([action_of(op, "test")])
    assert cx.consumer_key(child, symmetry=False) != before
    assert cx.consumer_key(sim, symmetry=False) == before
    assert sim.chooser.state() == state


def test_forked_choosers_choose_alike_and_apart() -> None:
    """A fork makes the choices its original would have made, whichever draws first, and draws by
    one never move the other."""
    from model.choice import SeededChooser

    a = SeededChooser(7, first=False)
    expected = [SeededChooser(7, first=False).new_uuid() for _ in range(1)]
    b = a.fork()
    c = b.fork()
    assert c.new_uuid() == expected[0]
    assert a.state() == b.state() != c.state()
    assert b.new_uuid() == expected[0] and a.new_uuid() == expected[0]
    d = a.fork()
    picks = [d.pick("k", ["x", "y", "z"]) for _ in range(8)]
    assert [a.pick("k", ["x", "y", "z"]) for _ in range(8)] == picks

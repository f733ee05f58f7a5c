"""The per-rebalance cost built from encoded messages equals what a simulated run sends."""

from __future__ import annotations

import pytest

from model.designs import make_engine
from model.designs import ops as o
from model.designs.cost import COST_DESIGNS, broker, cost, names, topic_names
from model.designs.cost_kip848 import JOIN_COST_DESIGNS, first_join


def simulated(design: str, n: int, t: int) -> tuple[int, int]:
    topics = {x: n for x in topic_names(t)}
    engine = make_engine(design, topics, {"choice": "newest"} if design == "sync-in-join" else {}, 0)
    for m in names(n)[:-1]:
        engine.apply(o.Join(m, tuple(topics)))
    engine.apply(o.Advance(30_000))
    before = engine.traffic(rebalance_only=True)
    engine.apply(o.Join(names(n)[-1], tuple(topics)))
    engine.apply(o.Advance(30_000))
    after = engine.traffic(rebalance_only=True)
    return after[0] - before[0], after[1] - before[1]


@pytest.mark.parametrize("design", [d for d in COST_DESIGNS if d != "compressed"])
@pytest.mark.parametrize("n", [5, 12])
def test_formula_equals_simulation(design: str, n: int) -> None:
    c = cost(design, n, 3)
    assert (c.messages, c.bytes) == simulated(design, n, 3)


def test_join_all_grows_with_the_square_and_the_shipped_protocol_linearly() -> None:
    ratio = {d: cost(d, 2000, 4).bytes / cost(d, 200, 4).bytes for d in COST_DESIGNS}
    assert ratio["independent-hash"] > 90 and ratio["consistent-hash"] > 90 and ratio["hashed-subgroups"] > 90
    assert ratio["shipped"] < 12 and ratio["broker-coordinator"] < 12
    assert cost("compressed", 500, 10).bytes < cost("independent-hash", 500, 10).bytes / 10


@pytest.mark.parametrize("design", JOIN_COST_DESIGNS)
@pytest.mark.parametrize("n", [5, 12])
def test_first_join_formula_equals_simulation(design: str, n: int) -> None:
    topics = {x: n for x in topic_names(3)}
    engine = make_engine(design, topics, {}, 0)
    for m in names(n)[:-1]:
        engine.apply(o.Join(m, tuple(topics)))
    engine.apply(o.Advance(30_000))
    engine.apply(o.Join(names(n)[-1], tuple(topics)))
    engine.apply(o.Advance(30_000))
    messages, size, epoch = engine.by_member[names(n)[-1]]
    c = first_join(design, n, 3)
    assert epoch > 0 and (c.messages, c.bytes) == (messages, size)


def test_a_server_issued_id_costs_one_more_round_trip() -> None:
    shipped, server = first_join("shipped-kip848", 500, 10), first_join("kip1082-server-id", 500, 10)
    assert (shipped.round_trips, server.round_trips) == (1, 2)
    assert server.messages == 2 * shipped.messages and server.bytes > shipped.bytes


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("n", [5, 12])
def test_per_thread_broker_cost_equals_simulation(threads: int, n: int) -> None:
    topics = {x: n for x in topic_names(3)}
    engine = make_engine("broker-coordinator", topics, {"threads": str(threads)}, 0)
    for m in names(n)[:-1]:
        engine.apply(o.Join(m, tuple(topics)))
    engine.apply(o.Advance(30_000))
    before = engine.traffic(rebalance_only=True)
    engine.apply(o.Join(names(n)[-1], tuple(topics)))
    engine.apply(o.Advance(30_000))
    after = engine.traffic(rebalance_only=True)
    c = broker(n, 3, n, threads)
    assert (c.messages, c.bytes) == (after[0] - before[0], after[1] - before[1])

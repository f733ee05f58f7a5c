"""Small bounds finish: the consumer explorer's abstract state space is finite.

Past client times that no rule tells apart map to one value (`consumer.explore._clamp`); before
that, every idle `advance` of a 1 x 1 group made a new abstract state, to any depth. The exact
counts pin the abstraction: a faster explorer must find the same states, not fewer.
"""

from __future__ import annotations

import pytest

import conformance.protocols  # noqa: F401  (installs the kits)
from conformance.protocols.consumer.explore import explore_consumer


@pytest.mark.parametrize(("members", "partitions", "states", "levels"), [(1, 1, 32, 10), (1, 2, 56, 17)])
def test_consumer_explore_finishes_at_small_bounds(
    members: int, partitions: int, states: int, levels: int
) -> None:
    result = explore_consumer(members, partitions, depth=200, budget_s=120, cpu_clock=True)
    assert result.complete and not result.budget_hit
    assert result.graph.number_of_nodes() == states
    assert result.levels_done == levels
    assert result.found == {}

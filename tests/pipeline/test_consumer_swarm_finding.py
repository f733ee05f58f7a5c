"""The consumer swarm's `consumer.no_double_client_assignment` finding (docs/pipeline.md), judged.

A late copy of c3's epoch-0 join (owns nothing) arrived while c3's member held epoch 5 with
previous epoch 0: the coordinator accepted it as the previous epoch with owned ⊆ assigned (GMM
`throwIfConsumerGroupMemberEpochIsInvalid`, docs/protocol-reference.md#b6 row 12) and skipped the revocation of
u-0..2 (CurrentAssignmentBuilder, docs/protocol-reference.md#b5 step 1), so c1 received u-0..2 while the c3 client still
held them at epoch 5. Apache Kafka 4.4.0 does the same (reports/pipeline/duplicate-join-probe.md).
The c3 client is a zombie: its next heartbeat (epoch 5, owning partitions no longer assigned to
its member) is fenced. The invariant now counts a client at the previous epoch as current only
when what it owns is still assigned to its member, as row 12 does.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from conformance.formats.trace_file import read_trace
from conformance.trace.replay import replay
from model.consumer.progress_invariants import no_double_client_assignment
from model.errors import ErrorCode
from model.observation import Observation

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "reports/pipeline/counterexamples/consumer.no_double_client_assignment_18d9dd508b56.ndjson"


def test_the_duplicated_join_leaves_a_zombie_whose_next_heartbeat_is_fenced():
    result = replay(read_trace(TRACE))
    assert result.exact and result.verdict == "FIXED", (result.verdict, result.difference, result.error)
    sim = result.sim
    world = sim.world
    group = world.groups["g"]
    c1, c3 = (next(c for c in world.clients if c.name == n) for n in ("c1", "c3"))
    member = group.members[c3.member_id]
    # the situation of the finding: both clients own u-0..2; c3 is at its member's previous epoch
    shared = c1.owned & c3.owned
    assert {("u", 0), ("u", 1), ("u", 2)} <= shared
    assert c3.member_epoch == member.previous_member_epoch < member.member_epoch
    assert not c3.owned <= member.assigned
    # ... so the coordinator fences c3's next heartbeat (row 12), in the model as in Kafka 4.4.0
    sim.stall("c3", False)
    obs = sim.client_step("c3")
    response = next(d.response for d in obs.deliveries)
    assert response.error_code == ErrorCode.FENCED_MEMBER_EPOCH


def test_a_client_at_the_previous_epoch_that_owns_only_assigned_partitions_still_counts():
    """Teeth: the previous epoch with owned ⊆ assigned is accepted by the coordinator, so such a
    client sharing a partition with another current client is a double assignment."""
    result = replay(read_trace(TRACE))
    world = result.sim.world
    group = world.groups["g"]
    c1, c3 = (next(c for c in world.clients if c.name == n) for n in ("c1", "c3"))
    member = group.members[c3.member_id]
    assert not no_double_client_assignment(Observation(world, None, (), world, 0))
    one = min(member.assigned)
    c3_legal = replace(c3, owned=frozenset({one}))  # at the previous epoch, owning an assigned partition
    c1_too = replace(c1, owned=c1.owned | {one})
    clients = tuple(c1_too if c.name == "c1" else c3_legal if c.name == "c3" else c for c in world.clients)
    doubled = replace(world, clients=clients)
    found = no_double_client_assignment(Observation(doubled, None, (), doubled, 0))
    assert found == [f"g: clients c1 and c3 both own {one}"]

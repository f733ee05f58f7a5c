"""The `old_incarnation` rule sends a restarted static member's old process's requests (a zombie,
KIP-345). While the old member id still leads the group's generation, that process is the leader,
and a leader's SyncGroup carries the assignment it computed: the rule sends no empty one (thorough
classic profile, seed 3, where an empty leader sync left a partition unassigned for good)."""

from __future__ import annotations

from conformance.protocols.classic.machine import MachineSettings, make_machine
from conformance.protocols.classic.versions import MODEL_VERSIONS


def _machine():  # type: ignore[no-untyped-def]
    machine = make_machine(MachineSettings({}))()
    top = tuple(hi for _lo, hi in MODEL_VERSIONS.values())
    machine.setup(
        members=2,
        partitions=1,
        second_topic=False,
        assignor="range",
        static=[True, True],
        versions=[top, top],
    )
    return machine


def _sent(machine) -> int:  # type: ignore[no-untyped-def]
    return sum(1 for entry in machine.sim.log if entry.op.get("op") == "send")


def test_a_zombie_that_still_leads_sends_no_empty_sync() -> None:
    machine = _machine()
    machine.sim.converge(lambda _obs: None)
    group = machine.sim.world.group
    leader = next(n for n, c in machine.sim.clients.items() if c.member_id == group.leader)
    follower = next(n for n in machine.sim.clients if n != leader)
    machine.incarnations = [(leader, group.leader, machine.sim.clients[leader].config.instance_id)]
    before = _sent(machine)
    machine.old_incarnation(0, "sync")
    assert _sent(machine) == before
    follower_id = machine.sim.clients[follower].member_id
    machine.incarnations = [(follower, follower_id, machine.sim.clients[follower].config.instance_id)]
    machine.old_incarnation(0, "sync")
    assert _sent(machine) == before + 1

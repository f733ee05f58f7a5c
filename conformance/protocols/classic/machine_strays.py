"""Classic rules that send what a well-behaved consumer never does (model and mutants).

Older or buggy clients and administrative tools send them all the same: a commit from a process that
is not (or no longer) a member, or without any identity; a commit of a partition that does not exist
or with oversized metadata; a JoinGroup with an empty group id, a session timeout the broker must
refuse or protocols the group does not share; a SyncGroup naming another protocol; a LeaveGroup
naming a static member by group.instance.id alone (the Admin API's `removeMembersFromConsumerGroup`).
They run the coordinator's request validation, which the other draws never reach
(reports/suite-power.md, "Rules of the reference model the draws never run"), and
model/classic/stray_invariants.py judges the answers. Each kind's answer on Apache Kafka is checked
beside the model by tests/test_stray_requests_kafka.py; like the targeted rules, `make_machine` adds
them on the model and mutant targets only, so a real target's draws per seed stay as its published
report was made with.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from conformance.engine.rules import MEMBER, FaultHost
from model.classic.messages import (
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    SyncGroupRequest,
)

STRAY_COMMITS = (
    "stale-generation",
    "ghost-member",
    "no-identity",
    "unknown-partition",
    "unknown-topic",
    "oversized-metadata",
)
STRAY_JOINS = (
    "empty-group-id",
    "session-below-minimum",
    "session-above-maximum",
    "other-protocol-type",
    "unshared-protocols",
)
STRAY_SYNCS = ("other-protocol-type", "other-protocol-name")


def _config(sim: Any) -> Any:
    """The coordinator's configuration (the model's, or the oracle's learned copy of a target's)."""
    return sim.port.coordinator.config


def _generation(sim: Any) -> int:
    group = sim.world.group if sim.world is not None else None
    return group.generation if group is not None else 0


def commit_request(sim: Any, name: str, kind: str, delta: int = 1) -> OffsetCommitRequest:
    """An OffsetCommit of ``kind`` (`STRAY_COMMITS`) on member ``name``'s behalf, at its version.
    Before the group exists, one carrying a generation commits to a group that does not exist."""
    c = sim.clients[name]
    gen, member_id, instance_id = _generation(sim), c.member_id, c.config.instance_id
    partitions = (OffsetCommitPartition("t", 0, 7),)
    if kind == "stale-generation":
        gen += delta
    elif kind == "ghost-member":
        member_id, instance_id = f"{name}-ghost", None
    elif kind == "no-identity":
        gen, member_id, instance_id = -1, "", None
    elif kind == "unknown-partition":
        partitions = (OffsetCommitPartition("t", sim.topics["t"], 7),)
    elif kind == "unknown-topic":
        partitions = (OffsetCommitPartition("absent", 0, 7),)
    else:
        oversized = "m" * (_config(sim).offset_metadata_max_bytes + 1)
        partitions = (OffsetCommitPartition("t", 0, 7, oversized),)
    return OffsetCommitRequest(
        c.config.group_id, gen, member_id, partitions, instance_id, c.config.commit_version
    )


def join_request(sim: Any, name: str, kind: str, as_member: bool) -> JoinGroupRequest:
    """A JoinGroup of ``kind`` (`STRAY_JOINS`) the broker must refuse, as member ``name`` (its
    member id, or a new member's)."""
    c = sim.clients[name]
    cfg = _config(sim)
    group_id, protocol_type = c.config.group_id, "consumer"
    session, protocols = c.config.session_timeout_ms, tuple((a, b"") for a in c.config.assignors)
    if kind == "empty-group-id":
        group_id = ""
    elif kind == "session-below-minimum":
        session = cfg.min_session_timeout_ms - 1
    elif kind == "session-above-maximum":
        session = cfg.max_session_timeout_ms + 1
    elif kind == "other-protocol-type":
        protocol_type = "connect"
    else:
        protocols = (("stray-assignor", b""),)
    return JoinGroupRequest(
        group_id,
        c.member_id if as_member else "",
        protocol_type,
        protocols,
        session,
        c.config.rebalance_timeout_ms if c.config.join_version >= 1 else -1,
        c.config.instance_id if as_member else None,
        None,
        c.config.client_id,
        c.config.join_version,
    )


def sync_request(sim: Any, name: str, kind: str) -> SyncGroupRequest:
    """Member ``name``'s SyncGroup v5 at the group's generation naming another protocol type or
    name (`STRAY_SYNCS`)."""
    c = sim.clients[name]
    chosen = c.protocol or c.config.assignors[0]
    protocol_type, protocol = (
        ("connect", chosen) if kind == "other-protocol-type" else ("consumer", "stray-assignor")
    )
    return SyncGroupRequest(
        c.config.group_id, _generation(sim), c.member_id, (), c.config.instance_id, protocol_type, protocol, 5
    )


def leave_request(sim: Any, name: str, held: bool) -> LeaveGroupRequest | None:
    """A LeaveGroup v3+ naming member ``name``'s group.instance.id alone (an operator removes a
    static member, KIP-345), or an instance id nobody holds; None for a dynamic member's own."""
    c = sim.clients[name]
    if held and c.config.instance_id is None:
        return None
    iid = c.config.instance_id if held else f"{name}-nobody"
    return LeaveGroupRequest(c.config.group_id, (MemberIdentity("", iid),), max(3, c.config.leave_version))


class StrayRules(FaultHost):
    """Mixin of `ClassicMachine` (conformance/protocols/classic/machine.py)."""

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER, kind=st.sampled_from(STRAY_COMMITS), delta=st.sampled_from((-1, 1)))
    def stray_commit(self, i: int, kind: str, delta: int) -> None:
        name = self.client(i)
        req = commit_request(self.sim, name, kind, delta)
        self.observe(
            self.sim.send_raw(name, req), f"{name} sends a commit ({kind}, generation {req.generation_id})"
        )

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER, kind=st.sampled_from(STRAY_JOINS), as_member=st.booleans())
    def stray_join(self, i: int, kind: str, as_member: bool) -> None:
        name = self.client(i)
        self.observe(
            self.sim.send_raw(name, join_request(self.sim, name, kind, as_member)),
            f"{name} sends a JoinGroup ({kind})",
        )

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER, kind=st.sampled_from(STRAY_SYNCS))
    def stray_sync(self, i: int, kind: str) -> None:
        name = self.client(i)
        self.observe(
            self.sim.send_raw(name, sync_request(self.sim, name, kind)), f"{name} sends a SyncGroup ({kind})"
        )

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER, held=st.booleans())
    def leave_by_instance_id(self, i: int, held: bool) -> None:
        name = self.client(i)
        req = leave_request(self.sim, name, held)
        if req is not None:
            what = req.members[0].group_instance_id
            self.observe(self.sim.send_raw(name, req), f"an operator removes instance {what}")

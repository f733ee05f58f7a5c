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


class StrayRules(FaultHost):
    """Mixin of `ClassicMachine` (conformance/protocols/classic/machine.py)."""

    names: list[str]
    note: Any
    _sync: Any

    def _config(self) -> Any:
        assert self.sim is not None
        return self.sim.port.coordinator.config

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER, kind=st.sampled_from(STRAY_COMMITS), delta=st.sampled_from((-1, 1)))
    def stray_commit(self, i: int, kind: str, delta: int) -> None:
        """An OffsetCommit of ``kind`` on member i's behalf, with its OffsetCommit version. Before the
        group exists, a commit carrying a generation is a commit to a group that does not exist."""
        assert self.sim is not None and self.sim.world is not None
        name = self.client(i)
        c = self.sim.clients[name]
        group = self.sim.world.group
        gen = group.generation if group is not None else 0
        member_id, instance_id = c.member_id, c.config.instance_id
        partitions = (OffsetCommitPartition("t", 0, 7),)
        if kind == "stale-generation":
            gen += delta
        elif kind == "ghost-member":
            member_id, instance_id = f"{name}-ghost", None
        elif kind == "no-identity":
            gen, member_id, instance_id = -1, "", None
        elif kind == "unknown-partition":
            partitions = (OffsetCommitPartition("t", self.sim.topics["t"], 7),)
        elif kind == "unknown-topic":
            partitions = (OffsetCommitPartition("absent", 0, 7),)
        else:
            partitions = (
                OffsetCommitPartition("t", 0, 7, "m" * (self._config().offset_metadata_max_bytes + 1)),
            )
        req = OffsetCommitRequest(
            c.config.group_id, gen, member_id, partitions, instance_id, c.config.commit_version
        )
        self.observe(self.sim.send_raw(name, req), f"{name} sends a commit ({kind}, generation {gen})")

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER, kind=st.sampled_from(STRAY_JOINS), as_member=st.booleans())
    def stray_join(self, i: int, kind: str, as_member: bool) -> None:
        """A JoinGroup the broker must refuse, as member i (its member id, or a new member's)."""
        assert self.sim is not None
        name = self.client(i)
        c = self.sim.clients[name]
        cfg = self._config()
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
        req = JoinGroupRequest(
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
        self.observe(self.sim.send_raw(name, req), f"{name} sends a JoinGroup ({kind})")

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER, kind=st.sampled_from(STRAY_SYNCS))
    def stray_sync(self, i: int, kind: str) -> None:
        """Member i's SyncGroup v5 at the group's generation naming another protocol type or name."""
        assert self.sim is not None and self.sim.world is not None
        name = self.client(i)
        c = self.sim.clients[name]
        group = self.sim.world.group
        gen = group.generation if group is not None else 0
        sync: SyncGroupRequest = self._sync(name, gen, c.member_id, c.config.instance_id)
        if kind == "other-protocol-type":
            req = SyncGroupRequest(
                sync.group_id,
                gen,
                sync.member_id,
                (),
                sync.group_instance_id,
                "connect",
                sync.protocol_name or "range",
                5,
            )
        else:
            req = SyncGroupRequest(
                sync.group_id,
                gen,
                sync.member_id,
                (),
                sync.group_instance_id,
                "consumer",
                "stray-assignor",
                5,
            )
        self.observe(self.sim.send_raw(name, req), f"{name} sends a SyncGroup ({kind})")

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER, held=st.booleans())
    def leave_by_instance_id(self, i: int, held: bool) -> None:
        """A LeaveGroup v3+ naming member i's group.instance.id alone (an operator removes a static
        member, KIP-345), or an instance id nobody holds."""
        assert self.sim is not None
        name = self.client(i)
        c = self.sim.clients[name]
        if held and c.config.instance_id is None:
            return
        iid = c.config.instance_id if held else f"{name}-nobody"
        req = LeaveGroupRequest(c.config.group_id, (MemberIdentity("", iid),), max(3, c.config.leave_version))
        self.observe(self.sim.send_raw(name, req), f"an operator removes instance {iid}")

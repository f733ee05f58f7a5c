"""The classic oracle's comparison: a model answer against the target's, at the protocol level.

Equality is protocol-level (errors, generations, members, leader, assignments); a member id the
model generated is provisional until the target's answer names it, then bound (renamed) in that
hypothesis (`bind`). Apache Kafka's exact choices the protocol leaves open (the member id format,
echoed protocol fields, the leader it keeps) are kafka-compat notes (`compat_notes`,
`protocol_level`), never mismatches.
"""

from __future__ import annotations

import uuid
from typing import Any

from conformance.engine.oracle.adoption import derive
from conformance.engine.oracle.choosers import PROVISIONAL
from conformance.protocols.classic.hypo import Hypo, ids_in, rename_hypo
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import (
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    Request,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.errors import ErrorCode


class Mismatch(Exception):
    pass


def bind(h: Hypo, model_id: str, target_id: str, what: str) -> None:
    if model_id == target_id:
        return
    if PROVISIONAL in model_id and target_id and target_id not in ids_in(h):
        rename_hypo(h, model_id, target_id)
        h.bound = {**h.bound, model_id: target_id}
        return
    raise Mismatch(f"{what}: model {model_id!r}, target {target_id!r}")


def compare(h: Hypo, ref: int, target: Any, version: int = 99) -> None:
    """Protocol-level equality of the model's answer to ``ref`` and the target's at the ``version``
    the wire carried, binding provisional ids."""
    model = h.outstanding[ref][0]
    if type(model) is not type(target):
        raise Mismatch(f"answer type {type(target).__name__}, model {type(model).__name__}")
    if isinstance(model, JoinGroupResponse):
        if model.error != target.error:
            raise Mismatch(f"error {_e(target.error)}, model {_e(model.error)}")
        if model.error in (ErrorCode.MEMBER_ID_REQUIRED, ErrorCode.NONE):
            bind(h, model.member_id, target.member_id, "member id")
        if model.error != ErrorCode.NONE:
            return
        model = h.outstanding[ref][0]
        if model.generation_id != target.generation_id:
            raise Mismatch(f"generation {target.generation_id}, model {model.generation_id}")
        if (model.protocol_name or None) != (target.protocol_name or None):
            raise Mismatch(f"protocol {target.protocol_name!r}, model {model.protocol_name!r}")
        bind(h, model.leader, target.leader, "leader")
        model = h.outstanding[ref][0]
        if model.skip_assignment != target.skip_assignment:
            raise Mismatch(f"skip_assignment {target.skip_assignment}, model {model.skip_assignment}")
        mine = _listed(model, version)
        theirs = _listed(target, version)
        if len(mine) != len(theirs):
            raise Mismatch(f"{len(theirs)} members listed, model {len(mine)}")
        # bind provisional ids of listed members by (instance id, metadata) when unambiguous
        for mid, inst, meta in mine:
            if PROVISIONAL in mid:
                free = [t for t in theirs if t[1] == inst and t[2] == meta and t[0] not in ids_in(h)]
                if len(free) == 1:
                    bind(h, mid, free[0][0], "listed member")
        model = h.outstanding[ref][0]
        mine = _listed(model, version)
        if mine != theirs:
            raise Mismatch(f"members {[m[0] for m in theirs]}, model {[m[0] for m in mine]}")
    elif isinstance(model, SyncGroupResponse):
        if model.error != target.error:
            raise Mismatch(f"error {_e(target.error)}, model {_e(model.error)}")
        if model.error == ErrorCode.NONE and model.assignment != target.assignment:
            raise Mismatch(f"assignment {target.assignment.hex()}, model {model.assignment.hex()}")
    elif isinstance(model, LeaveGroupResponse):
        if model.error != target.error:
            raise Mismatch(f"error {_e(target.error)}, model {_e(model.error)}")
        mine = [(m.member_id, m.group_instance_id, m.error) for m in model.members]
        theirs = [(m.member_id, m.group_instance_id, m.error) for m in target.members]
        if mine != theirs:
            raise Mismatch(f"members {theirs}, model {mine}")
    elif isinstance(model, OffsetCommitResponse):
        if sorted(model.partitions) != sorted(target.partitions):
            raise Mismatch(f"partitions {sorted(target.partitions)}, model {sorted(model.partitions)}")
    elif model.error != target.error:
        raise Mismatch(f"error {_e(target.error)}, model {_e(model.error)}")


def _listed(resp: JoinGroupResponse, version: int) -> list[tuple[str, str, bytes]]:
    """The members a JoinGroup answer lists; below v5 the wire carries no group instance id
    (KIP-345; Kafka's JoinGroupResponse.json), so a leader on an old version is not told it."""
    return sorted(
        (m.member_id, (m.group_instance_id or "") if version >= 5 else "", m.metadata) for m in resp.members
    )


def _e(code: Any) -> str:
    return code.name if isinstance(code, ErrorCode) else str(code)


def compat_notes(request: Request, version: int, target: Any) -> list[str]:
    """Apache Kafka's exact choices that the protocol leaves open (kafka-compat level only)."""
    out = []
    if isinstance(target, JoinGroupResponse) and target.error in (
        ErrorCode.NONE,
        ErrorCode.MEMBER_ID_REQUIRED,
    ):
        assert isinstance(request, JoinGroupRequest)
        prefix = (
            request.group_instance_id if request.group_instance_id is not None else request.client_id
        ) + "-"
        mid = target.member_id
        if not request.member_id and not (mid.startswith(prefix) and _is_uuid(mid[len(prefix) :])):
            out.append(f"member id {mid!r} is not '{prefix}<UUID>' (Kafka: ClassicGroup.java L774)")
        if version >= 7 and target.error == ErrorCode.NONE and target.protocol_type != request.protocol_type:
            out.append(
                f"JoinGroup v{version} protocol_type {target.protocol_type!r}, Kafka echoes {request.protocol_type!r}"
            )
    if isinstance(target, SyncGroupResponse) and version >= 5 and target.error == ErrorCode.NONE:
        assert isinstance(request, SyncGroupRequest)
        if target.protocol_type != request.protocol_type or target.protocol_name != request.protocol_name:
            out.append(
                f"SyncGroup v5 protocol ({target.protocol_type!r}, {target.protocol_name!r}), "
                f"Kafka answers the group's ({request.protocol_type!r}, {request.protocol_name!r})"
            )
    return out


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
        return True
    except ValueError:
        return False


class ProtocolLevel:
    """Mixed into the model coordinator by `protocol_level`: the protocol's freedom where Kafka is
    stricter (module docstring of `protocol_level`)."""

    chooser: Any

    def elect_joined_leader(self, tx: Any, group: Any) -> bool:
        joined = sorted(m.member_id for m in group.members.values() if m.awaiting_join is not None)
        if not joined:
            return False
        leader = group.members.get(group.leader or "")
        if leader is not None and leader.awaiting_join is not None:
            options = [leader.member_id, *(j for j in joined if j != leader.member_id)]
            pick = self.chooser.pick("leader-kept", options)
            if pick != leader.member_id:
                tx.set(group, leader=pick)
            return True
        tx.set(group, leader=self.chooser.pick("leader", joined))
        return True


def protocol_level(coordinator: ClassicCoordinator) -> ClassicCoordinator:
    """The same coordinator (mutants included) with the protocol's freedom where Kafka is stricter.

    Kafka keeps a leader that rejoined (CG L502); the protocol only needs the leader to be a joined
    member. The oracle offers every joined member as a choice, Kafka's first; a hypothesis that
    needs another one is legal at the protocol level and marked as a kafka-compat deviation.
    """
    out: ClassicCoordinator = derive(coordinator, ProtocolLevel, "ProtocolLevel")
    return out


def short(resp: Any) -> str:
    if resp is None:
        return "nothing"
    err = getattr(resp, "error", None)
    name = type(resp).__name__.replace("Response", "")
    return f"{name}({_e(err)})" if err is not None else name

"""The KIP-848 oracle's comparison: a model answer against the target's, at the protocol level.

A DeleteGroups answer must agree group by group on the error code.

Errors, member ids, member epochs and assignments must agree; an absent assignment means
"unchanged" (docs/protocol-reference.md#b10), so it matches the member's previous one either way (a kafka-compat
note). The heartbeat interval Kafka echoes is a kafka-compat note too. Answers that mean "find the
coordinator again" are resent, not judged (`coordinator_moved`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from model.consumer.messages import DeleteGroupsResponse, OffsetCommitResponse, TopicPartition
from model.errors import ErrorCode

#: coordinator errors a client answers by finding the coordinator again (Errors.java 14, 15, 16)
COORDINATOR_MOVED = frozenset(
    {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}
)
#: how long a request is resent after such answers (the classic oracle's bound, faults.RETRY_DEADLINE_S)
RESEND_DEADLINE_S = 30.0


def coordinator_moved(answer: Any) -> bool:
    if answer is None:
        return False
    if isinstance(answer, OffsetCommitResponse | DeleteGroupsResponse):
        codes = set(answer.errors().values())
        return bool(codes) and codes <= COORDINATOR_MOVED
    return answer.error_code in COORDINATOR_MOVED


def compare(model: Any, target: Any, prior: frozenset[TopicPartition] | None) -> tuple[str | None, list[str]]:
    """(protocol mismatch or None, kafka-compat notes) between a model answer and the target's."""
    notes: list[str] = []
    if isinstance(model, OffsetCommitResponse):
        mine, theirs = model.errors(), target.errors()
        if mine != theirs:
            return f"partition errors {_errs(theirs)}, model {_errs(mine)}", notes
        return None, notes
    if isinstance(model, DeleteGroupsResponse):
        mine_g, theirs_g = model.errors(), target.errors()
        if mine_g != theirs_g:
            return f"group errors {_group_errs(theirs_g)}, model {_group_errs(mine_g)}", notes
        return None, notes
    if model.error_code != target.error_code:
        return f"error {_e(target.error_code)}, model {_e(model.error_code)}", notes
    if model.error_code != ErrorCode.NONE:
        return None, notes
    if model.member_id != target.member_id:
        return f"member id {target.member_id!r}, model {model.member_id!r}", notes
    if model.member_epoch != target.member_epoch:
        return f"member epoch {target.member_epoch}, model {model.member_epoch}", notes
    mine, theirs = model.assigned(), target.assigned()
    if mine != theirs:
        # an absent assignment means "unchanged" (docs/protocol-reference.md#b10): the same information either way
        if mine is None and theirs == prior:
            notes.append("sends the unchanged assignment again (the model omits it, GMM L1811)")
        elif theirs is None and mine == prior:
            notes.append("omits an assignment the model sends (full request or join, GMM L1811)")
        else:
            return f"assignment {tps(theirs)}, model {tps(mine)}", notes
    if model.heartbeat_interval_ms != target.heartbeat_interval_ms:
        notes.append(
            f"heartbeat interval {target.heartbeat_interval_ms} ms, model {model.heartbeat_interval_ms} ms"
        )
    return None, notes


def _e(code: Any) -> str:
    return code.name if isinstance(code, ErrorCode) else str(code)


def tps(parts: frozenset[TopicPartition] | None) -> str:
    if parts is None:
        return "none"
    return "{" + ", ".join(f"{t}-{p}" for t, p in sorted(parts)) + "}"


def _errs(errors: Mapping[TopicPartition, Any]) -> str:
    return "{" + ", ".join(f"{t}-{p}: {_e(c)}" for (t, p), c in sorted(errors.items())) + "}"


def _group_errs(errors: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{g}: {_e(c)}" for g, c in sorted(errors.items())) + "}"


def short(resp: Any) -> str:
    if resp is None:
        return "nothing"
    if isinstance(resp, DeleteGroupsResponse):
        return f"DeleteGroups{_group_errs(resp.errors())}"
    if isinstance(resp, OffsetCommitResponse):
        return f"OffsetCommit{_errs(resp.errors())}"
    if resp.error_code != ErrorCode.NONE:
        return f"{_e(resp.error_code)}"
    return f"NONE epoch {resp.member_epoch} assignment {tps(resp.assigned())}"

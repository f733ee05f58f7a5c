"""One operation of the KIP-848 oracle: a request sent, its answer awaited and judged.

A ConsumerGroupHeartbeat, an OffsetCommit or a DeleteGroups is answered at once, so the oracle sends it, waits for
the answer (resending after "find the coordinator again" answers, as the Java consumer does), and
keeps the candidates that explain it (`ExchangePort`). None does: a protocol finding. The first
kept is the one shown; its kafka-compat notes (an echoed interval, an adopted assignor choice,
where a new group's epochs start) are reported once.
"""

from __future__ import annotations

import time
from typing import Any

from conformance.errors import TargetError
from conformance.protocols.consumer.codec import (
    API_CONSUMER_GROUP_HEARTBEAT,
    API_DELETE_GROUPS,
    API_OFFSET_COMMIT,
    OFFSET_COMMIT_VERSION,
    decode_delete_groups,
    decode_heartbeat,
    decode_offset_commit,
)
from conformance.protocols.consumer.hypo import CHypo
from conformance.protocols.consumer.judge import RESEND_DEADLINE_S, compare, coordinator_moved, short
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartition,
)
from model.result import Delivery, Result

NAMES = {
    API_CONSUMER_GROUP_HEARTBEAT: "ConsumerGroupHeartbeat",
    API_OFFSET_COMMIT: "OffsetCommit",
    API_DELETE_GROUPS: "DeleteGroups",
}


class ConsumerOperation:
    """Mixed into `ConsumerOraclePort` in front of `ExchangePort` (module docstring)."""

    hypos: list[CHypo]
    answers: dict[int, Any]
    requests: dict[int, tuple[str, Any, int, int]]
    origin_reported: bool
    adoptions: int

    def _exchange(self, api: int, request: Any, payload: Any, ref: int) -> Result:
        member = self.current_member
        self.members.add(member)
        self.pre_split = self.switched = None
        reported = self.hypos[0] if self.hypos else None
        t = self.clock()
        version = getattr(payload, "__version__", getattr(request, "version", OFFSET_COMMIT_VERSION))
        self.requests[ref] = (member, request, int(version), t)
        if not self._send(t, member, payload, ref, NAMES[api]):
            return Result()
        target, t_ans = self._await(ref, t)
        since = time.monotonic()
        while coordinator_moved(target) and time.monotonic() - since < RESEND_DEADLINE_S:
            # the coordinator is loading or moved (a restart): find it again and resend, as the Java
            # consumer does (AbstractHeartbeatRequestManager.onErrorResponse); only the answer after
            # that is judged
            self.log.append(f"t={t} ref {ref} {member} {NAMES[api]} -> {short(target)}: resent")
            self.session.resends += 1
            self.adapter.coordinators.pop(self.real_group, None)
            try:
                self.adapter.find_coordinator(self.real_group, deadline_s=RESEND_DEADLINE_S)
                time.sleep(0.05)
                t = self.clock()
                self._submit(member, payload, ref)
            except TargetError as e:
                self._crash(t, f"cannot resend {NAMES[api]}: {e}")
                return Result()
            target, t_ans = self._await(ref, t)
        if target is not None:
            self._note_answer(t, t_ans)
        self.log.append(f"t={t} ref {ref} {member} {NAMES[api]} -> {short(target)} at t={t_ans}")
        if target is None:  # unknown whether the target applied it: keep both
            self._unanswered(t, t_ans, request, ref)
            if not any(f.rule == "target.crash" for f in self.findings):
                self._no_answer(f"oracle.{NAMES[api]}", t, f"{member} sends {NAMES[api]} (ref {ref})")
            return Result()
        self.answers[ref] = target
        prior = self._prior(request)
        cands, reasons = self._explain(t, t_ans, request, ref, target, prior)
        if not cands:
            what = f"{member} sends {NAMES[api]} v{getattr(request, 'version', '?')} (ref {ref})"
            self._unexplained(f"oracle.{NAMES[api]}", t, what, short(target), reasons)
        else:
            h0 = self._follow(cands, lambda c: (c.adoptions, c.origin, -c.fired), reported)
            _m, notes = compare(self._model_answer(h0, ref) or target, target, prior)
            for note in notes:
                self._finding("kafka-compat", f"compat.{NAMES[api]}", f"ref {ref}: {note}")
            self._report_notes(h0.notes, "compat.assignor", f"ref {ref}")
            self.adoptions = max(self.adoptions, h0.adoptions)
            self._report_origin(ref, target)
        return Result(deliveries=[Delivery(ref, target)])

    def _report_origin(self, ref: int, target: Any) -> None:
        """Once the answers decided where a new group's epochs start: kafka-compat if at 0."""
        origins = {h.origin for h in self.hypos}
        if (
            not self.origin_reported
            and len(origins) == 1
            and isinstance(target, ConsumerGroupHeartbeatResponse)
            and target.member_epoch > 0
        ):
            self.origin_reported = True
            if origins == {0}:
                self._finding(
                    "kafka-compat",
                    "compat.ConsumerGroupHeartbeat",
                    f"ref {ref}: a new group starts at epoch 0; Apache Kafka 4.3+ starts it at 1 "
                    "(KAFKA-20268, apache/kafka#21700)",
                )

    def _decode_arrival(self, arrival: Any) -> Any:
        if arrival.api_key == API_CONSUMER_GROUP_HEARTBEAT:
            return decode_heartbeat(arrival.value, self.topics)
        if arrival.api_key == API_DELETE_GROUPS:
            return decode_delete_groups(arrival.value, {self.group_id: self.real_group})
        return decode_offset_commit(arrival.value, self.topics)

    def _prior(self, request: Any) -> frozenset[TopicPartition] | None:
        if not isinstance(request, ConsumerGroupHeartbeatRequest) or not self.hypos:
            return None
        g = self.hypos[0].state.groups.get(request.group_id)
        m = None if g is None else g.members.get(request.member_id)
        return None if m is None else m.assigned

    def _model_answer(self, h: CHypo, ref: int) -> Any:
        return getattr(h, "_answer", None)

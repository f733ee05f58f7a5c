"""One operation of the mixed oracle: a member's request sent, its answer awaited and judged.

In a consumer group every classic request is answered as soon as its records are written, and a
ConsumerGroupHeartbeat at once, so the mixed oracle waits for each answer as the KIP-848 oracle
does (`ExchangePort`). A request the target and the model both park (a classic group of several
members in a join phase) is waited for up to the answer deadline, which the real machine sets to
the classic oracle's wait for a parked join; one still parked then is out of what this oracle
follows: the run stops as unsupported (`unsupported`), not failed. The first kept hypothesis is the one shown; the variants its answers
selected (where epochs start, the classic rejoin rule, the migration policy) and what it adopted
are kafka-compat notes, reported once.
"""

from __future__ import annotations

from typing import Any

from conformance.protocols.classic.codec import API_NAMES
from conformance.protocols.mixed.codec import NotOffered, decode, encode
from conformance.protocols.mixed.hypo import ORIGINS, MHypo
from conformance.protocols.mixed.judge import api_name, compare, short
from model.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartition


class MixedOperation:
    """Mixed into `MixedOraclePort` in front of `ExchangePort` (module docstring)."""

    hypos: list[MHypo]
    unsupported: str | None
    rejoin_reported: bool
    policy_reported: bool
    _pending: tuple[Any, int]

    def exchange(self, member: str, request: Any, ref: int) -> Any:
        """Send ``request`` for ``member``; the target's answer (None: none), hypotheses updated."""
        self.members.add(member)
        self.current_member = member
        self.pre_split = self.switched = self.rewritten = None
        reported = self.hypos[0] if self.hypos else None
        t = self.clock()
        try:
            api, version, payload = self._encode(request)
        except NotOffered as e:
            self._finding("protocol", f"oracle.{e.api}", str(e))
            return None
        self._pending = (request, version)
        if not self._send(t, member, payload, ref, API_NAMES.get(api, api)):
            return None
        target, t_ans = self._await(ref, t)
        if target is not None:
            self._note_answer(t, t_ans)
        name = api_name(request)
        self.log.append(f"t={t} ref {ref} {member} {name} -> {short(target)} at t={t_ans}")
        if target is None:
            cands = self._unanswered(t, t_ans, request, ref)
            parked = bool(cands) and all(getattr(c, "_answer", None) is None for c in cands)
            if parked and not self.crashed:
                # the model parks it too (a join phase waiting for other classic members): consistent,
                # but this oracle waits for answers one request at a time (module docstring)
                self.unsupported = self.unsupported or (
                    f"at t={t}, {member}'s {name} (ref {ref}) is parked by the target and by the model "
                    "(a classic group of several members in a join phase): the mixed oracle on a real "
                    "target does not follow parked requests"
                )
                return None
            if not self.crashed:
                self._no_answer(f"oracle.{name}", t, f"{member} sends {name} (ref {ref})")
            return None
        prior = self._prior(request)
        cands, reasons = self._explain(t, t_ans, request, ref, target, prior)
        if not cands:
            self._unexplained(
                f"oracle.{name}", t, f"{member} sends {name} (ref {ref})", short(target), reasons
            )
            return target
        h0 = self._follow(cands, lambda c: (c.adoptions, c.origin), reported)
        self.rewritten = getattr(h0, "rewritten", None)  # an adoption redid what no answer had shown
        _m, notes = compare(getattr(h0, "_answer", None) or target, target, prior)
        for note in notes:
            self._finding("kafka-compat", f"compat.{name}", f"ref {ref}: {note}")
        self._report_variants(ref)
        self._report_notes(h0.notes, "compat.mixed", f"ref {ref}")
        return target

    def _report_variants(self, ref: int) -> None:
        """Once the answers selected them: the classic rejoin rule and a migration policy other than
        Kafka's default (kafka-compat)."""
        rejoins = {ORIGINS[h.origin][1] for h in self.hypos}
        if not self.rejoin_reported and rejoins == {"assignment"}:
            self.rejoin_reported = True
            self._finding(
                "kafka-compat",
                "compat.mixed",
                f"ref {ref}: a classic member is told to rejoin when the target assignment epoch is ahead of "
                "it (as Apache Kafka 4.4.0); the model's default compares the group epoch (GMM @1eb7644 "
                "L5637): MixedConfig.classic_rejoin_epoch=assignment selected",
            )
        policies = {ORIGINS[h.origin][2] for h in self.hypos}
        if not self.policy_reported and len(policies) == 1 and policies != {"bidirectional"}:
            self.policy_reported = True
            self._finding(
                "kafka-compat",
                "compat.mixed",
                f"ref {ref}: the target behaves as group.consumer.migration.policy={policies.pop()} "
                "(Apache Kafka's default is bidirectional)",
            )

    # ------------------------------------------------------------------ wire
    def _encode(self, request: Any) -> tuple[int, int, Any]:
        return encode(self.adapter.connect(), request, self.real_group, self.topics)

    def _decode(self, request: Any, version: int, value: Any) -> Any:
        """The model's view of the target's answer ``value`` to ``request`` (real topic names mapped)."""
        return decode(request, version, value, self.topics)

    def _decode_arrival(self, arrival: Any) -> Any:
        request, version = self._pending
        return self._decode(request, version, arrival.value)

    def _prior(self, request: Any) -> frozenset[TopicPartition] | None:
        if not isinstance(request, ConsumerGroupHeartbeatRequest) or not self.hypos:
            return None
        g = self.hypos[0].state.consumer.groups.get(request.group_id)
        m = None if g is None else g.members.get(request.member_id)
        return None if m is None else m.assigned

"""Asynchronous resolution of SubscribedTopicRegex (``regex_resolution="async"``, Kafka 4.0+).

Kafka (KAFKA-17593, apache/kafka PR #17864; GroupMetadataManager in Apache Kafka 4.4.0):

* A heartbeat that changes a member's regex never resolves it. A regex no member had before is
  compiled (INVALID_REGULAR_EXPRESSION if it does not compile) and asks for a resolution; a regex
  another member already has, once resolved, bumps the group epoch at once; dropping a regex bumps
  too (KAFKA-19899, apache/kafka PR #21075) (``maybeUpdateRegularExpressions``).
* A heartbeat of a group with regexes starts a resolution of all of them when none is under way,
  the last one is more than ``REGEX_BATCH_REFRESH_MIN_INTERVAL_MS`` (10 s) old, and a regex is
  unresolved, a topic was created since, or the last one is older than
  ``group.consumer.regex.refresh.interval.ms`` (KAFKA-18961, apache/kafka PR #19904).
* The resolution runs on an executor; its result (``handleRegularExpressionsResult``) writes one
  ConsumerGroupRegularExpression record per regex still subscribed and bumps the group epoch when a
  regex's topics or the subscription metadata changed.

The model runs the executor task as a timer (`REGEX_RESOLUTION`) due at the heartbeat's instant:
it fires at the next clock step, so "later" is any time after the heartbeat, which the oracle takes
as a timing hypothesis like every other timer (docs/oracle.md#timing-hypotheses-the-tolerance-window).
"""

from __future__ import annotations

from model.consumer.group_rules import GroupRules
from model.consumer.records import TimerScheduled
from model.consumer.regex_records import RegexResolvedRecord, RegexResolvedTombstone
from model.consumer.state import (
    REGEX_RESOLUTION,
    ConsumerCoordinatorState,
    ConsumerGroup,
    ConsumerMember,
    Timer,
    regex_matches,
)
from model.consumer.txn import _Txn


def subscribers(group: ConsumerGroup, regex: str) -> int:
    """ConsumerGroup ``numSubscribedMembers``: members whose subscription is ``regex``."""
    return sum(1 for m in group.members.values() if m.subscribed_topic_regex == regex)


class RegexRules(GroupRules):
    """The coordinator's regex steps (module docstring)."""

    #: GMM REGEX_BATCH_REFRESH_MIN_INTERVAL_MS (10 000 in Apache Kafka 4.0 and 4.4.0)
    regex_min_interval_ms: int = 10_000

    def update_regular_expressions(
        self, txn: _Txn, member: ConsumerMember, updated: ConsumerMember, now: int
    ) -> tuple[bool, bool]:
        """GMM ``maybeUpdateRegularExpressions``, before the member's new subscription is written:
        (bump the group epoch now, the regex changed)."""
        group = txn.require_group()
        old, new = member.subscribed_topic_regex or "", updated.subscribed_topic_regex or ""
        if old == new:
            self.maybe_start_resolution(txn, group, dict(self.subscribed_regexes(group)), False, now)
            return False, False
        if old and subscribers(group, old) == 1:
            txn.emit(RegexResolvedTombstone(txn.group_id, old))
        bump, required = False, False
        if new and subscribers(group, new) == 0:
            required = True  # compiled by `validate_regex` already
        elif new:
            bump = new in group.resolved_regexes
        else:
            bump = True  # the member dropped its regex (KAFKA-19899)
        counts = self.subscribed_regexes(group)
        if old:
            counts[old] -= 1
        if new:
            counts[new] = counts.get(new, 0) + 1
        self.maybe_start_resolution(txn, group, {r: n for r, n in counts.items() if n > 0}, required, now)
        return bump, True

    @staticmethod
    def subscribed_regexes(group: ConsumerGroup) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in group.members.values():
            if m.subscribed_topic_regex:
                counts[m.subscribed_topic_regex] = counts.get(m.subscribed_topic_regex, 0) + 1
        return counts

    def maybe_start_resolution(
        self, txn: _Txn, group: ConsumerGroup, regexes: dict[str, int], required: bool, now: int
    ) -> None:
        """The refresh conditions of ``maybeUpdateRegularExpressions`` (module docstring)."""
        if not regexes or (REGEX_RESOLUTION, "") in group.timers:
            return
        resolved = group.resolved_regexes.values()
        last = max((r.timestamp for r in resolved), default=None)
        if last is not None and now <= last + self.regex_min_interval_ms:
            return
        required = (
            required
            or len(regexes) != len(group.resolved_regexes)
            or min((r.version for r in resolved), default=0) < txn.scratch.topics_version
            or (last is not None and now > last + self.config.regex_refresh_interval_ms)
        )
        if required:
            self.start_resolution(txn, tuple(sorted(regexes)), now)

    def start_resolution(self, txn: _Txn, regexes: tuple[str, ...], now: int) -> None:
        """The executor task, as a timer due at once (module docstring)."""
        txn.emit(TimerScheduled(txn.group_id, REGEX_RESOLUTION, "", now, regexes=regexes))

    def resolve_regex(self, state: ConsumerCoordinatorState, regex: str) -> frozenset[str]:
        """GMM ``refreshRegularExpressions``: the image's topics the regex fully matches that the
        principal may DESCRIBE (KAFKA-18813). Divergence: Python ``re`` instead of RE2J."""
        denied = self.config.topic_describe_denied
        return frozenset(t for t in state.topics if t not in denied and regex_matches(regex, t))

    def on_regex_resolution(self, txn: _Txn, timer: Timer) -> None:
        """GMM ``handleRegularExpressionsResult``: record each regex still subscribed; bump when a
        regex's topics or the subscription metadata changed."""
        group = txn.group
        if group is None:
            return
        changed = False
        for regex in timer.regexes:
            if subscribers(group, regex) == 0:
                continue
            topics = self.resolve_regex(txn.scratch, regex)
            before = group.resolved_regexes.get(regex)
            changed |= topics != (frozenset() if before is None else before.topics)
            version = txn.scratch.topics_version
            txn.emit(RegexResolvedRecord(txn.group_id, regex, tuple(sorted(topics)), timer.deadline, version))
        self.update_subscription_metadata(txn, changed)

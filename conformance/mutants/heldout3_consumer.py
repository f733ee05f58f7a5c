"""KIP-848 and mixed-group coordinator mutants of the third held-out wave, ``specs/bugs-heldout.yaml``:
topic authorization of subscriptions, regex-resolved topics and metadata changes, and the online
upgrade of a classic group to a consumer group.

Each class overrides one rule of `model.consumer.coordinator.ConsumerCoordinator` or, for the mixed
ones, of `model.mixed.coordinator.MixedCoordinator` (run as the variant ``mixed_mutant=NAME``, like
`conformance.mutants.heldout_mixed`), and reproduces one real bug; ``specs/bugs-heldout.yaml``
names the source of each.
"""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Mutant
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatRequest
from model.consumer.state import ConsumerCoordinatorState, ConsumerGroup, regex_matches
from model.consumer.txn import _Rejected
from model.embedded import EmbeddedDecodeError, decode_subscription
from model.errors import ErrorCode
from model.mixed.consumer_group import CONSUMER_PROTOCOL_TYPE
from model.mixed.coordinator import MixedCoordinator
from model.mixed.state import MixedState

# ---------------------------------------------------------------------------------- consumer groups


class TopicDescribeNotChecked(ConsumerCoordinator):
    """KAFKA-18813: the coordinator never asks whether the member may DESCRIBE the topics it
    subscribes to. A heartbeat naming a topic the principal is denied is accepted (no
    TOPIC_AUTHORIZATION_FAILED), and a regular expression resolves to every matching topic of the
    image, so the member is assigned partitions of topics it is not allowed to see."""

    def check_topics_authorized(self, request: ConsumerGroupHeartbeatRequest) -> None:
        return None

    def resolve_regex(self, state: ConsumerCoordinatorState, regex: str) -> frozenset[str]:
        return frozenset(t for t in state.topics if regex_matches(regex, t))


class RegexTopicsNotWatched(ConsumerCoordinator):
    """KAFKA-18916: the coordinator's index from topics to the groups that use them is fed by the
    members' topic names only, not by the topics their regular expressions resolved to. A topic
    reached only through a regex that is deleted or grows partitions does not mark the group for a
    metadata refresh, so no group epoch bump and no new target follow the change; the group keeps
    its stale assignment until something else (a later regex resolution) recomputes it."""

    def group_watches_topic(self, state: ConsumerCoordinatorState, group: ConsumerGroup, topic: str) -> bool:
        return any(topic in m.subscribed_topic_names for m in group.members.values())


# ---------------------------------------------------------------------------------- mixed groups


class UpgradeRejectsEmptyAssignment(MixedCoordinator):
    """KAFKA-17733: converting a classic group on an online upgrade decodes every member's last
    assignment, and a member that has joined but never synced (an empty assignment) fails the
    decoding as a malformed embedded protocol. The consumer-protocol member whose join triggers the
    upgrade is answered GROUP_ID_NOT_FOUND and the group stays classic while such a member exists."""

    def validate_online_upgrade(self, state: MixedState, group_id: str) -> None:
        super().validate_online_upgrade(state, group_id)
        if any(not m.assignment for m in state.classic.groups[group_id].members.values()):
            raise _Rejected(ErrorCode.GROUP_ID_NOT_FOUND, "malformed embedded consumer protocol")


class UpgradeDropsAssignorUserData(MixedCoordinator):
    """KAFKA-18134: the online upgrade does not look at the user data a custom client-side assignor
    put in the members' assignments. A classic group whose assignor relies on it is converted to a
    consumer group anyway (the consumer-protocol join succeeds) and the user data is silently lost,
    instead of the upgrade being refused with GROUP_ID_NOT_FOUND."""

    def validate_online_upgrade(self, state: MixedState, group_id: str) -> None:
        group = state.classic.groups[group_id]
        if not self.config.policy.upgrade_enabled:
            raise _Rejected(ErrorCode.GROUP_ID_NOT_FOUND, "online upgrade is disabled")
        if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise _Rejected(ErrorCode.GROUP_ID_NOT_FOUND, "group does not use the consumer embedded protocol")
        if len(group.members) > self.config.consumer.max_size:
            raise _Rejected(ErrorCode.GROUP_ID_NOT_FOUND, "group larger than group.consumer.max.size")
        if group.protocol is None:
            raise _Rejected(ErrorCode.UNKNOWN_SERVER_ERROR, "classic group has no selected protocol yet")
        for member in group.members.values():
            try:
                decode_subscription(member.metadata(group.protocol))
            except EmbeddedDecodeError:
                raise _Rejected(
                    ErrorCode.GROUP_ID_NOT_FOUND, "malformed embedded consumer protocol"
                ) from None


def _m(name: str, fault: str, source: str, **parts: Any) -> Mutant:
    return Mutant(name, "consumer", "heldout", fault, source, (), **parts)


def _mixed(name: str, fault: str, source: str, cls: type[MixedCoordinator]) -> Mutant:
    return Mutant(
        name, "mixed", "heldout", fault, source, (), coordinator=cls, variants=(("mixed_mutant", name),)
    )


#: mixed mutants, resolved by the variant ``mixed_mutant=NAME`` (`conformance.protocols.mixed.trace`)
HELDOUT3_MIXED_MUTANTS: dict[str, type[MixedCoordinator]] = {
    "kafka-17733": UpgradeRejectsEmptyAssignment,
    "kafka-18134": UpgradeDropsAssignorUserData,
}

HELDOUT3_CONSUMER_MUTANTS: tuple[Mutant, ...] = (
    _m(
        "kafka-18813",
        "subscriptions to topics the principal may not describe are accepted and assigned",
        "KAFKA-18813 / apache/kafka PR #18989",
        coordinator=TopicDescribeNotChecked,
    ),
    _m(
        "kafka-18916",
        "a change to a topic reached only through a regex does not refresh the group",
        "KAFKA-18916 / apache/kafka PR #19088",
        coordinator=RegexTopicsNotWatched,
    ),
    _mixed(
        "kafka-17733",
        "an online upgrade fails when a classic member has an empty assignment",
        "KAFKA-17733 / apache/kafka PR #17853",
        UpgradeRejectsEmptyAssignment,
    ),
    _mixed(
        "kafka-18134",
        "an online upgrade proceeds and drops a custom assignor's user data",
        "KAFKA-18134 / apache/kafka PR #18046",
        UpgradeDropsAssignorUserData,
    ),
)

__all__ = ["HELDOUT3_CONSUMER_MUTANTS", "HELDOUT3_MIXED_MUTANTS"]

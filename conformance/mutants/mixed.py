"""Mixed-group (KIP-848, docs/protocol-reference.md#b13) coordinator mutants: the model with one migration rule broken.

Each is a subclass overriding one rule of `model.mixed.coordinator`; the tests show the matching
``mixed.*`` invariant reports it, and ``--variant mixed_mutant=NAME`` runs a scenario against it.
"""

from __future__ import annotations

from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import TopicPartition
from model.consumer.state import ConsumerGroup, ConsumerMember
from model.mixed.classic_requests import MixedConsumerCoordinator
from model.mixed.coordinator import MixedCoordinator
from model.mixed.state import MixedState
from model.result import Result


class UpgradeIgnoresPolicy(MixedCoordinator):
    """Converts any classic group on an epoch-0 heartbeat (no ``validateOnlineUpgrade``)."""

    def validate_online_upgrade(self, state: MixedState, group_id: str) -> None:
        pass


class UpgradeKeepsClassicGroup(MixedCoordinator):
    """Upgrades without the classic group's tombstone: one id, two groups."""

    def delete_classic_group(self, scratch: MixedState, result: Result, group_id: str) -> None:
        pass


class EmptyReplacementHonoursPolicy(MixedCoordinator):
    """Treats an empty classic group like a non-empty one (refuses it under policy ``disabled``)."""

    def validate_empty_replacement(self, state: MixedState, group_id: str) -> None:
        self.validate_online_upgrade(state, group_id)


class _DowngradeIgnoresPolicy(MixedConsumerCoordinator):
    def downgrade_allowed(self, group: ConsumerGroup, leaving: ConsumerMember) -> bool:
        others = [m for mid, m in group.members.items() if mid != leaving.member_id]
        return leaving.classic is None and bool(others) and all(m.classic is not None for m in others)


class DowngradeIgnoresPolicy(MixedCoordinator):
    """Downgrades whatever ``group.consumer.migration.policy`` says."""

    consumer_class = _DowngradeIgnoresPolicy


class _NeverDowngrades(MixedConsumerCoordinator):
    def downgrade_allowed(self, group: ConsumerGroup, leaving: ConsumerMember) -> bool:
        return False


class NeverDowngrades(MixedCoordinator):
    """Keeps a consumer group of classic members after its last consumer-protocol member left."""

    consumer_class = _NeverDowngrades


class _NoReplacementDowngrade(MixedConsumerCoordinator):
    def downgrade_on_replacement(self, before: ConsumerGroup, replaced: ConsumerMember) -> bool:
        return False


class NoReplacementDowngrade(MixedCoordinator):
    """Ignores ``validateOnlineDowngradeWithReplacedMemberId``."""

    consumer_class = _NoReplacementDowngrade


class _HeartbeatNeverRejoins(MixedConsumerCoordinator):
    def classic_heartbeat_needs_rejoin(self, group: ConsumerGroup, member: ConsumerMember) -> bool:
        return False


class HeartbeatNeverRejoins(MixedCoordinator):
    """Never answers REBALANCE_IN_PROGRESS to a classic member's Heartbeat."""

    consumer_class = _HeartbeatNeverRejoins


class _GenerationOffByOne(MixedConsumerCoordinator):
    def join_generation(self, member: ConsumerMember) -> int:
        return member.member_epoch + 1


class GenerationOffByOne(MixedCoordinator):
    """Answers JoinGroup with a generation other than the member epoch."""

    consumer_class = _GenerationOffByOne


class _SyncGivesTarget(MixedConsumerCoordinator):
    def sync_partitions(self, group: ConsumerGroup, member: ConsumerMember) -> frozenset[TopicPartition]:
        return group.target_of(member.member_id)


class SyncGivesTarget(MixedCoordinator):
    """SyncGroup hands a classic member its target, including partitions another member still
    holds (the KAFKA-16147 shape on the classic path)."""

    consumer_class = _SyncGivesTarget


class _ClassicRebalanceTimer(MixedConsumerCoordinator):
    def schedule_rebalance_timeout(self, txn, member, now):  # type: ignore[no-untyped-def]
        ConsumerCoordinator.schedule_rebalance_timeout(self, txn, member, now)


class ClassicRebalanceTimer(MixedCoordinator):
    """Arms the consumer-protocol rebalance timer for classic members too."""

    consumer_class = _ClassicRebalanceTimer


class ClassicLoadForgetsExpiry(MixedCoordinator):
    """Loads a classic group after a failover without arming its members' heartbeat expiry (Kafka's
    ``onLoaded`` reschedules each loaded member's heartbeat, apache/kafka@1eb7644
    GroupMetadataManager.java L3828-3843): members that never come back stay for ever. Only a
    failover while the group is classic shows it (`conformance.protocols.mixed.failover`
    loads each hypothesis' classic group through the coordinator's ``failover``)."""

    def failover(self, records: list[object], now: int) -> tuple[MixedState, Result]:
        state, result = super().failover(records, now)
        for group in state.classic.groups.values():
            group.timers = {k: t for k, t in group.timers.items() if not k.startswith("expire:")}
        return state, result


MIXED_MUTANTS: dict[str, type[MixedCoordinator]] = {
    "upgrade-ignores-policy": UpgradeIgnoresPolicy,
    "upgrade-keeps-classic-group": UpgradeKeepsClassicGroup,
    "empty-replacement-honours-policy": EmptyReplacementHonoursPolicy,
    "downgrade-ignores-policy": DowngradeIgnoresPolicy,
    "never-downgrades": NeverDowngrades,
    "no-replacement-downgrade": NoReplacementDowngrade,
    "heartbeat-never-rejoins": HeartbeatNeverRejoins,
    "generation-off-by-one": GenerationOffByOne,
    "sync-gives-target": SyncGivesTarget,
    "classic-rebalance-timer": ClassicRebalanceTimer,
    "classic-load-forgets-expiry": ClassicLoadForgetsExpiry,
}

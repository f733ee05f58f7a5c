"""Mixed-group (KIP-848 online migration) mutants of the second (held-out) bug catalogue,
docs/bug-catalogue-heldout.md.

Each is a subclass overriding one rule of `model.mixed.coordinator`. Like the first mixed mutants
(`conformance.mutants.mixed`) they run as the variant ``mixed_mutant=NAME``; their `Mutant` entries
carry that variant, so ``--target mutant:NAME --protocol mixed`` selects them too.
"""

from __future__ import annotations

from conformance.mutants.base import Mutant
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.records import TimerScheduled
from model.consumer.state import SESSION, ConsumerGroup, ConsumerMember
from model.mixed.coordinator import MixedConsumerCoordinator, MixedCoordinator
from model.mixed.state import MixedState
from model.result import Result


class _DowngradeAboveMaxSize(MixedConsumerCoordinator):
    def downgrade_allowed(self, group: ConsumerGroup, leaving: ConsumerMember) -> bool:
        saved = self.classic_max_size
        self.classic_max_size = 2**31 - 1
        try:
            return super().downgrade_allowed(group, leaving)
        finally:
            self.classic_max_size = saved


class DowngradeAboveMaxSize(MixedCoordinator):
    """KAFKA-16861: the last consumer-protocol member leaving downgrades the group to a classic
    group even when its remaining members exceed ``group.classic.max.size``."""

    consumer_class = _DowngradeAboveMaxSize


class UpgradeArmsConsumerSessionTimeout(MixedCoordinator):
    """apache/kafka PR #16290: the members of a classic group converted on an online upgrade get the
    consumer-group session timeout (``group.consumer.session.timeout.ms``) instead of the session
    timeout of their own JoinGroup."""

    def convert_to_consumer_group(self, scratch: MixedState, group_id: str, result: Result, now: int) -> None:
        super().convert_to_consumer_group(scratch, group_id, result, now)
        group = scratch.consumer.groups.get(group_id)
        if group is None:
            return
        deadline = now + self.consumer.session_timeout_ms(group_id)
        for member_id in sorted(group.members):
            self._emit(scratch, result, TimerScheduled(group_id, SESSION, member_id, deadline))


class _ClassicHolderNotReplaced(MixedConsumerCoordinator):
    def check_instance_released(self, existing: ConsumerMember) -> None:
        ConsumerCoordinator.check_instance_released(self, existing)


class ClassicHolderNotReplaced(MixedCoordinator):
    """KAFKA-17228: a consumer-protocol static member joining with the instance id of a classic
    member is answered UNRELEASED_INSTANCE_ID, as if the classic holder had to leave with epoch -2
    (which a classic consumer never sends), so the upgrade of a static group stalls."""

    consumer_class = _ClassicHolderNotReplaced


HELDOUT_MIXED_MUTANTS: dict[str, type[MixedCoordinator]] = {
    "kafka-16861": DowngradeAboveMaxSize,
    "kafka-pr-16290": UpgradeArmsConsumerSessionTimeout,
    "kafka-17228": ClassicHolderNotReplaced,
}

_SOURCES = {
    "kafka-16861": ("downgrade above group.classic.max.size", "KAFKA-16861 / apache/kafka PR #16163"),
    "kafka-pr-16290": ("upgraded classic members get the consumer session timeout", "apache/kafka PR #16290"),
    "kafka-17228": (
        "a classic static holder blocks a consumer-protocol rejoin",
        "KAFKA-17228 / apache/kafka PR #16800",
    ),
}

HELDOUT_MIXED_MUTANT_LIST: tuple[Mutant, ...] = tuple(
    Mutant(name, "mixed", "heldout", fault, source, (), coordinator=cls, variants=(("mixed_mutant", name),))
    for name, cls in HELDOUT_MIXED_MUTANTS.items()
    for fault, source in (_SOURCES[name],)
)

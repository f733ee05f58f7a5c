"""The set-up of a mixed-group run on a real target (docs/protocol-reference.md#b13).

A mixed run needs both protocols: the classic group protocol (JoinGroup) and KIP-848
ConsumerGroupHeartbeat v1 (the oracle drives v1 members, KIP-1082). `not_run_reason` says why a
target cannot run it (the same "not offered" / "not run" wording as `consumer_check`);
`mixed_setup` gives the mixed machine its port factory (one `MixedOraclePort` per example, the model
with the target's settings) and the real-time profile.
"""

from __future__ import annotations

from typing import Any

from conformance.engine.profiles import Profile
from conformance.protocols.classic.setup import not_run_reason as classic_reason
from conformance.protocols.consumer.setup import not_run_reason as consumer_reason

#: Real-time mixed runs: each example forms, upgrades and rejoins a group first (about 6 s), then
#: every step lets real time pass; names match the model's profiles.
MIXED_REAL_PROFILES = {
    "dev": Profile("dev", 2, 6),
    "ci": Profile("ci", 3, 8, top_up=1),
    "thorough": Profile("thorough", 30, 25, top_up=1),
    # the mixed machine on real targets: the ci mix plus the failover and wire-fault rules
    "faults": Profile("faults", 3, 8, wire_faults=True, top_up=1),
}


def not_run_reason(handle: Any) -> str | None:
    for protocol_reason in (classic_reason, consumer_reason):
        why = protocol_reason(handle)
        if why is not None:
            return f"not run: mixed groups need both group protocols ({why})"
    return None


def mixed_setup(handle: Any, profile: Profile) -> tuple[Any, dict[str, Any], Profile]:
    """(port factory taking the example's seed and the variants, model config, real-time profile)."""
    from conformance.protocols.mixed.oracle import MixedOraclePort, mixed_config
    from conformance.targets.settings import DEFAULT
    from model.choice import SeededChooser
    from model.mixed.coordinator import MixedCoordinator

    config = mixed_config(handle)
    session = handle.session
    port_class: type[MixedOraclePort] = MixedOraclePort
    if MIXED_REAL_PROFILES[
        profile.name
    ].wire_faults:  # the oracle port plus the fault proxy's wire faults (`mixed_faults`)
        from conformance.protocols.mixed.faults import wire_fault_port_class

        port_class = wire_fault_port_class()

    def factory(seed: int, variants: dict[str, str]) -> MixedOraclePort:
        cls: type[MixedCoordinator] = MixedCoordinator
        if variants.get("mixed_mutant"):  # a broken model beside the target (the oracle's teeth)
            from conformance.errors import UsageError
            from conformance.mutants.mixed import MIXED_MUTANTS

            name = variants["mixed_mutant"]
            if name not in MIXED_MUTANTS:
                raise UsageError(f"unknown mixed mutant {name!r} (known: {', '.join(sorted(MIXED_MUTANTS))})")
            cls = MIXED_MUTANTS[name]
        stated = handle.settings.origin("group.consumer.migration.policy") != DEFAULT
        return port_class(cls(config, SeededChooser(seed)), session, policy_known=stated)

    return factory, {}, MIXED_REAL_PROFILES[profile.name]

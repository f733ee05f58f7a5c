"""`--variant KEY=VALUE`: protocol variants as configuration of the model, not copies (docs/cli.md#variants)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from conformance.errors import UsageError
from conformance.mutants import MUTANTS, with_mutant_variants


@dataclass(frozen=True)
class VariantKey:
    name: str
    values: tuple[str, ...]
    help: str
    protocols: tuple[str, ...]


VARIANTS: dict[str, VariantKey] = {
    v.name: v
    for v in (
        VariantKey(
            "sticky", ("v0", "v1"), "sticky assignor user data: v0 = pre-KIP-341, v1 = KIP-341", ("classic",)
        ),
        VariantKey(
            "assignor",
            ("range", "roundrobin", "sticky", "cooperative-sticky", "mixed"),
            "client-side assignor of every virtual member (mixed = drawn per run)",
            ("classic",),
        ),
        VariantKey(
            "cooperative_adjust",
            ("true", "false"),
            "KIP-429 adjust step; false = revoke and assign in one rebalance (KAFKA-14639)",
            ("classic",),
        ),
        VariantKey(
            "join_version",
            ("3", "4", "9"),
            "JoinGroup version the members send (KIP-394 from v4)",
            ("classic",),
        ),
        VariantKey(
            "heartbeat_version",
            ("0", "1"),
            "ConsumerGroupHeartbeat version (KIP-1082: v1 = client-generated member ids)",
            ("consumer",),
        ),
        VariantKey(
            "member_id_validation",
            ("kafka", "kip"),
            "KIP-1082 member id check: kafka = used verbatim, kip = must be a UUID (as KIP-1082 proposes)",
            ("consumer",),
        ),
        VariantKey(
            "migration_policy",
            ("disabled", "upgrade", "downgrade", "bidirectional"),
            "group.consumer.migration.policy for mixed groups (KIP-848; Kafka 4.0 default bidirectional; docs/protocol-reference.md#b13)",
            ("mixed",),
        ),
        VariantKey(
            "mixed_mutant",
            (
                "upgrade-ignores-policy",
                "upgrade-keeps-classic-group",
                "empty-replacement-honours-policy",
                "downgrade-ignores-policy",
                "never-downgrades",
                "no-replacement-downgrade",
                "heartbeat-never-rejoins",
                "generation-off-by-one",
                "sync-gives-target",
                "classic-rebalance-timer",
            ),
            "run a mixed scenario against a mutant (conformance/mutants/mixed.py)",
            ("mixed",),
        ),
        VariantKey(
            "mutant",
            tuple(sorted(MUTANTS)),
            "run against a mutant (conformance/mutants/, docs/mutants.md) instead of the reference model",
            ("classic", "consumer"),
        ),
    )
}


def parse_variants(items: Iterable[str]) -> dict[str, str]:
    """Parse KEY=VALUE items; unknown keys or values are a usage error naming the item.

    ``mutant=NAME`` brings the model variants that mutant is made of (e.g. kafka-7026: sticky v0)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--variant {item!r}: expected KEY=VALUE")
        spec = VARIANTS.get(key)
        if spec is None:
            raise UsageError(f"unknown variant {key!r} (known: {', '.join(sorted(VARIANTS))})")
        if value not in spec.values:
            raise UsageError(f"variant {key}={value!r}: expected one of {', '.join(spec.values)}")
        out[key] = value
    return with_mutant_variants(out)

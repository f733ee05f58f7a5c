"""Whether a real target runs the KIP-848 consumer protocol, and the set-up of a consumer run
(docs/real-targets.md).

`not_run_reason` says why it cannot run on an opened target: ApiVersions lists no
ConsumerGroupHeartbeat v1. `--protocol all` reports such a protocol as "not offered" / "not run"
instead of failing. `consumer_setup` gives the consumer machine its oracle port and the
model settings that match what the target was started with.
"""

from __future__ import annotations

from typing import Any

from conformance.engine.profiles import Profile
from conformance.targets.settings import model_fields

#: The broker settings a consumer-protocol run needs to know, and the model config key of each
#: (`conformance.targets.settings.MODEL_FIELDS`).
CONSUMER_KEYS = model_fields("consumer")
#: Real-time consumer runs: fewer examples than classic (members wait for session and rebalance
#: timeouts on a real clock); names match the model's profiles.
CONSUMER_REAL_PROFILES = {
    "dev": Profile("dev", 3, 15),
    "ci": Profile("ci", 6, 20, top_up=1),
    "thorough": Profile("thorough", 60, 40, top_up=1),
    "faults": Profile("faults", 8, 20, wire_faults=True, top_up=1),  # 8: the fault rules dilute the ci mix
}


def not_run_reason(handle: Any) -> str | None:
    caps = handle.capabilities
    if caps is None or handle.kind == "model":
        return None
    if "consumer" not in caps.features:
        return "not offered: the target does not offer ConsumerGroupHeartbeat (KIP-848)"
    lo, hi = caps.api_versions.get(68, (0, -1))
    if not lo <= 1 <= hi:
        return (
            f"not run: the target offers ConsumerGroupHeartbeat v{caps.api_versions[68][0]}-"
            f"v{caps.api_versions[68][1]} only; the oracle drives v1 members (KIP-1082)"
        )
    return None


def consumer_setup(handle: Any, profile: Profile) -> tuple[Any, dict[str, Any], Profile]:
    """(port factory, model config, real-time profile) for the consumer machine on ``handle``."""
    from conformance.protocols.consumer.faults import faulty_port_class

    port_class = faulty_port_class()  # the oracle port plus the fault proxy's wire faults

    config = consumer_model_config(handle)
    session = handle.session
    return (
        lambda coord: port_class(coord, session),
        config,
        CONSUMER_REAL_PROFILES[profile.name],
    )


def consumer_model_config(handle: Any) -> dict[str, Any]:
    """The consumer model's settings from the target's learned settings (`handle.settings`); a
    setting the target did not tell is Kafka's default, and a note says so."""
    from conformance.targets.settings import DEFAULT

    learned = handle.settings
    config: dict[str, Any] = {}
    for key, model_key in CONSUMER_KEYS.items():
        config[model_key] = learned.int(key)
        if learned.origin(key) == DEFAULT and key != "group.consumer.max.size":
            note = f"{key} unknown for this target; the model uses Kafka's default {learned[key]}"
            if note not in handle.notes:
                handle.notes.append(note)
    config["offset_commit_epochs"] = commit_epochs_rule(handle)
    return config


def commit_epochs_rule(handle: Any) -> str:
    """KIP-1251 commit epochs for Apache Kafka 4.3+ (its version known: a launcher's), else Kafka
    4.0's exact rule with a note (a commit with an older epoch may then be a false alarm)."""
    import re

    if getattr(handle, "launcher", None) is not None and "kafka" in str(getattr(handle, "name", "")):
        m = re.match(r"^(\d+)\.(\d+)", str(getattr(handle, "version", "")))
        if m and (int(m.group(1)), int(m.group(2))) >= (4, 3):
            return "assignment"
        if m:
            return "exact"
    note = "commit epochs: the target's version is unknown; the model uses the exact-epoch rule (KIP-1251 is Kafka 4.3+)"
    if note not in handle.notes:
        handle.notes.append(note)
    return "exact"

"""The group settings of a target, each with where it came from (docs/real-targets.md#settings).

The oracle's model must run with the settings the coordinator runs with; a wrong one is a false
alarm. Every setting the oracle reads is learned once, here, in this order:

* **started-with**: the launcher started the target with it (`Target.settings`);
* **asked**: the target said so (DescribeConfigs on its BROKER resource, KIP-133);
* **Kafka default**: neither, so Apache Kafka's documented default (`KAFKA_DEFAULTS`).

**given** (``--target-config FILE`` / ``KEY=VALUE``, the pytest plugin's ``--groupcheck-target-config``)
overrides all three: the user states how their coordinator is configured. A given value the target
contradicts (it said otherwise) is a divergence naming the setting (`conflicts`, rule ``target.config``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.errors import UsageError

STARTED, ASKED, GIVEN, DEFAULT = "started-with", "asked", "given", "Kafka default"

#: Apache Kafka's defaults for the settings the oracle reads. Source: GroupCoordinatorConfig.java
#: (group-coordinator/src/main/java/org/apache/kafka/coordinator/group/) at 4.0.0
#: (985bc99521dd22bbf620591b8db8613c54f596b2) L136-201 for the classic and session settings; the
#: assignment interval (Kafka 4.2+) and its minimum as Apache Kafka 4.4.0 ships them
#: (org.apache.kafka:kafka-group-coordinator:4.4.0, CONSUMER_GROUP_*ASSIGNMENT_INTERVAL_MS_DEFAULT);
#: offset.metadata.max.bytes from the same file (OFFSET_METADATA_MAX_SIZE_DEFAULT, L167 at 1eb7644).
KAFKA_DEFAULTS: dict[str, int | str] = {
    "group.initial.rebalance.delay.ms": 3_000,
    "group.min.session.timeout.ms": 6_000,
    "group.max.session.timeout.ms": 1_800_000,
    "group.max.size": 2**31 - 1,
    "group.consumer.session.timeout.ms": 45_000,
    "group.consumer.min.session.timeout.ms": 45_000,
    "group.consumer.max.session.timeout.ms": 60_000,
    "group.consumer.heartbeat.interval.ms": 5_000,
    "group.consumer.min.heartbeat.interval.ms": 5_000,
    "group.consumer.max.heartbeat.interval.ms": 15_000,
    "group.consumer.max.size": 2**31 - 1,
    "group.consumer.assignment.interval.ms": 1_000,
    "group.consumer.min.assignment.interval.ms": 0,
    "group.consumer.migration.policy": "bidirectional",
    "offset.metadata.max.bytes": 4096,
}
#: Kafka setting -> (the model config it sets: "classic", "consumer" or "mixed"; its field there),
#: for the settings a model config takes (a subset of `KAFKA_DEFAULTS`, in its order). The one
#: registry behind the launched model's config (conformance/targets/open.py), the consumer run's
#: (conformance/protocols/consumer/setup.py) and ``groupcheck serve --config`` (conformance/serve/setup.py).
MODEL_FIELDS: dict[str, tuple[str, str]] = {
    "group.initial.rebalance.delay.ms": ("classic", "initial_rebalance_delay_ms"),
    "group.min.session.timeout.ms": ("classic", "min_session_timeout_ms"),
    "group.max.session.timeout.ms": ("classic", "max_session_timeout_ms"),
    "group.max.size": ("classic", "max_size"),
    "group.consumer.session.timeout.ms": ("consumer", "session_timeout_ms"),
    "group.consumer.heartbeat.interval.ms": ("consumer", "heartbeat_interval_ms"),
    "group.consumer.max.size": ("consumer", "max_size"),
    "group.consumer.assignment.interval.ms": ("consumer", "assignment_interval_ms"),
    "group.consumer.migration.policy": ("mixed", "policy"),
    "offset.metadata.max.bytes": ("classic", "offset_metadata_max_bytes"),
}
#: settings whose value is a word, not a number of milliseconds or members
WORDS = {"group.consumer.migration.policy": ("disabled", "downgrade", "upgrade", "bidirectional")}
#: bounds on a --target-config file (hostile input)
MAX_FILE_BYTES = 64 * 1024
MAX_LINES = 1000


def model_fields(config: str) -> dict[str, str]:
    """Kafka setting -> field of one model config (``"classic"``, ``"consumer"``, ``"mixed"``), in
    `MODEL_FIELDS` order."""
    return {key: name for key, (where, name) in MODEL_FIELDS.items() if where == config}


@dataclass(frozen=True)
class Setting:
    key: str
    value: int | str
    origin: str


@dataclass
class TargetSettings:
    """key -> `Setting` for every key of `KAFKA_DEFAULTS`, and the given values the target contradicted."""

    values: dict[str, Setting] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)

    def __getitem__(self, key: str) -> int | str:
        return self.values[key].value

    def origin(self, key: str) -> str:
        return self.values[key].origin

    def int(self, key: str) -> int:
        return int(self.values[key].value)

    def lines(self) -> list[str]:
        """The report header: one line per setting, with its origin."""
        return [f"{s.key}={s.value} ({s.origin})" for _, s in sorted(self.values.items())]

    def said(self, key: str) -> str:
        """``key=value (origin)``, for a divergence that depends on the setting."""
        s = self.values[key]
        return f"{key}={s.value} ({s.origin})"


def parse_value(key: str, raw: object, where: str) -> int | str:
    """A setting's value, checked: a word from its list, else a non-negative integer."""
    if key not in KAFKA_DEFAULTS:
        raise UsageError(f"{where}: unknown setting {key!r} (known: {', '.join(sorted(KAFKA_DEFAULTS))})")
    text = str(raw).strip()
    if key in WORDS:
        word = text.lower()
        if word not in WORDS[key]:
            raise UsageError(f"{where}: {key}={text!r} is not one of {', '.join(WORDS[key])}")
        return word
    if not text.isdigit() or len(text) > 12:
        raise UsageError(f"{where}: {key}={text!r} is not a non-negative integer")
    return int(text)


def parse_given(items: Iterable[str]) -> dict[str, int | str]:
    """``--target-config`` values: ``KEY=VALUE`` or a file of such lines (``#`` comments, blanks)."""
    given: dict[str, int | str] = {}
    for item in items:
        if "=" in item and not Path(item).is_file():
            key, _, raw = item.partition("=")
            given[key.strip()] = parse_value(key.strip(), raw, f"--target-config {item}")
            continue
        path = Path(item)
        try:
            data = path.read_bytes()[: MAX_FILE_BYTES + 1]
        except OSError as e:
            raise UsageError(f"--target-config {item}: cannot read ({e.strerror or e})") from None
        if len(data) > MAX_FILE_BYTES:
            raise UsageError(f"{item}: longer than {MAX_FILE_BYTES} bytes")
        try:
            text = data.decode()
        except UnicodeDecodeError:
            raise UsageError(f"{item}: not UTF-8 text") from None
        for n, line in enumerate(text.splitlines()[: MAX_LINES + 1], 1):
            if n > MAX_LINES:
                raise UsageError(f"{item}: more than {MAX_LINES} lines")
            line = line.strip()
            if not line or line.startswith(("#", "!")):
                continue
            if "=" not in line:
                raise UsageError(f"{item}:{n}: want KEY=VALUE, got {line[:60]!r}")
            key, _, raw = line.partition("=")
            given[key.strip()] = parse_value(key.strip(), raw, f"{item}:{n}")
    return given


def learn(
    started: Mapping[str, Any] | None,
    asked: Mapping[str, str | None],
    given: Mapping[str, int | str],
) -> TargetSettings:
    """Every setting with its origin: given over started-with over asked over Kafka's default."""
    out = TargetSettings()
    for key, default in KAFKA_DEFAULTS.items():
        known: Setting | None = None
        if started is not None and key in started:
            known = Setting(key, parse_value(key, started[key], "launcher settings"), STARTED)
        elif asked.get(key) is not None:
            try:
                known = Setting(key, parse_value(key, asked[key], "DescribeConfigs"), ASKED)
            except UsageError:
                known = None  # an answer we cannot read is not knowledge
        chosen = known or Setting(key, default, DEFAULT)
        if key in given:
            chosen = Setting(key, given[key], GIVEN)
            if known is not None and known.value != given[key]:
                out.conflicts.append(
                    f"{key}: given {given[key]}, but the target was {known.origin} {known.value}"
                )
        out.values[key] = chosen
    return out


def ask(host: str, port: int, caps: Any, timeout: float) -> tuple[dict[str, str | None], str | None]:
    """What the target at ``host:port`` says about the settings (empty, with the reason, when it
    does not offer DescribeConfigs or cannot answer)."""
    from conformance.wire.configs import API_DESCRIBE_CONFIGS, describe_broker_configs
    from conformance.wire.requests import WireGarbage, WireRetry

    lo, hi = (caps.api_versions.get(API_DESCRIBE_CONFIGS) if caps is not None else None) or (0, -1)
    if hi < lo or hi < 1:
        return {}, "the target does not offer DescribeConfigs: its group settings are not asked"
    try:
        return describe_broker_configs(host, port, sorted(KAFKA_DEFAULTS), timeout, min(hi, 4)), None
    except (WireGarbage, WireRetry, LookupError, OSError) as e:
        return {}, f"DescribeConfigs failed ({e}): the group settings are not asked"


#: what an oracle finding mentions -> the settings its verdict depends on
DEPENDS = {
    "INVALID_SESSION_TIMEOUT": ("group.min.session.timeout.ms", "group.max.session.timeout.ms"),
    "heartbeat interval": ("group.consumer.heartbeat.interval.ms",),
    "GROUP_MAX_SIZE_REACHED": ("group.max.size", "group.consumer.max.size"),
    "member epoch": ("group.consumer.assignment.interval.ms",),
    "assignment epoch": ("group.consumer.assignment.interval.ms",),
}


def depends(message: str, settings: TargetSettings) -> str:
    """``message`` with the settings its verdict depends on, each with its value and origin."""
    keys = sorted({k for word, ks in DEPENDS.items() if word in message for k in ks if k in settings.values})
    if not keys:
        return message
    return f"{message} [depends on {', '.join(settings.said(k) for k in keys)}]"

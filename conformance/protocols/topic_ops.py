"""Topic changes on a real target: the model's TopicEvent on the wire (docs/faults.md#consumer-failover).

The consumer machine's topic rule (`model.consumer.world.TopicEvent`: create, add partitions,
delete) becomes CreateTopics / CreatePartitions (api key 37) / DeleteTopics (api key 20) sent to the
target with ``kio``, each with a deadline. A topic change reaches a KIP-848 group coordinator as a
new metadata image: ``GroupMetadataManager.onNewMetadataImage`` (apache/kafka,
group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupMetadataManager.java) asks
every group subscribed to a changed or deleted topic for a metadata refresh
(``requestMetadataRefresh``), and the group's next heartbeat recomputes its subscription metadata
(``hasMetadataExpired``), bumps the group epoch when it changed and computes a new target assignment
(KIP-848, "Group epoch - Trigger a rebalance": a change of the subscribed topics' metadata). So the
wait after a change is: until Metadata shows it (the broker's metadata cache is updated from the same
image the coordinator is handed, ``BrokerMetadataPublisher.onMetadataUpdate``), plus a short margin
for the coordinator's own event queue; the oracle keeps the "not seen yet" hypothesis open for a
tolerance window after that (`consumer/oracle.py`), so the verdict does not hang on the margin.

Topics that a run changes are the run's own: the port names them per group (`fresh_name`), so a
topic another example shares is never grown or deleted under it.
"""

from __future__ import annotations

import time
from typing import Any

from conformance.errors import TargetError
from conformance.wire.codec import API_METADATA, build, metadata_request, module, payload_class, topic_ids

API_CREATE_PARTITIONS = 37
API_DELETE_TOPICS = 20
#: how long a topic change may take on the target (request, then Metadata showing it)
CHANGE_DEADLINE_S = 30.0
#: after Metadata shows a change: time for the group coordinator's event to run (its queue), counted
#: only while the target is seen running (`seen_running_for`)
COORDINATOR_MARGIN_S = 0.3
#: between two Metadata answers of `seen_running_for`: a longer silence is a pause of the target
#: (GC, a starved or stopped JVM), and the margin counts again from the next answer
RUNNING_GAP_S = 0.15
#: how long `seen_running_for` waits for its margin at most (a target that never runs that long
#: without a pause is still checked after this)
RUNNING_CAP_S = 5.0
#: How long a new topic takes to reach the group coordinator's metadata image (generous on a busy box).
TOPIC_PROPAGATION_S = 1.0


def fresh_name(session: Any, model_topic: str, partitions: int, owner: str) -> str:
    """A real topic name only this port uses: ``gc-<run>-<topic>.<owner>-<partitions>``."""
    prefix, suffix = fresh_frame(session, owner)
    return f"{prefix}{model_topic}{suffix}{partitions}"


def fresh_frame(session: Any, owner: str) -> tuple[str, str]:
    """What `fresh_name` puts before and after the model topic name (the partition count follows)."""
    return f"gc-{session.run_id}-", f".{owner}-"


def create_topic(session: Any, name: str, partitions: int, deadline_s: float = CHANGE_DEADLINE_S) -> None:
    """CreateTopics through the target's launcher (or the wire for a target we did not start)."""
    launcher = session.launcher
    try:
        if launcher is not None:
            launcher.create_topic(name, partitions, deadline_s)
        else:
            from conformance.targets import create_topic as create

            create(session.adapter.bootstrap, name, partitions, deadline_s)
    except Exception as e:  # noqa: BLE001 - any launcher failure is a target error
        raise TargetError(f"{session.adapter.bootstrap}: cannot create topic {name}: {e}") from e


def _exchange(adapter: Any, req: Any, timeout_s: float) -> Any:
    from conformance.wire.connection import _blocking_exchange
    from conformance.wire.framing import decode_frame

    try:
        frame = _blocking_exchange(adapter.host, adapter.port, req, timeout_s, adapter.client_id)
    except (OSError, ConnectionError) as e:
        raise TargetError(f"{adapter.bootstrap}: {type(req).__name__} failed: {e}") from e
    value, findings = decode_frame(req.__api_key__, req.__version__, frame)
    if value is None:
        raise TargetError(
            f"{adapter.bootstrap}: {type(req).__name__} answer is garbage: {findings[0].message}"
        )
    return value


def _version(adapter: Any, api_key: int, want: int, name: str) -> int:
    lo, hi = adapter.connect().api_versions.get(api_key, (0, -1))
    version = min(want, hi)
    if version < lo or hi < 0:
        raise TargetError(f"{adapter.bootstrap}: the target offers no {name} (api key {api_key})")
    return version


def partition_counts(adapter: Any, names: list[str], timeout_s: float = 5.0) -> dict[str, int]:
    """Partition counts of ``names`` that Metadata lists (a missing or deleted topic is absent)."""
    version = _version(adapter, API_METADATA, 12, "Metadata")
    answer = _exchange(adapter, metadata_request(names, version), timeout_s)
    out = {}
    for t in answer.topics:
        if int(t.error_code.value) == 0 and t.name is not None:
            if all(int(p.error_code.value) == 0 and int(p.leader_id) >= 0 for p in t.partitions):
                out[str(t.name)] = len(t.partitions)
    return out


def wait_until(
    adapter: Any, name: str, partitions: int | None, deadline_s: float = CHANGE_DEADLINE_S
) -> float:
    """Poll Metadata until ``name`` has ``partitions`` partitions with leaders (None: until it is gone);
    seconds waited. TargetError naming the topic when the deadline passes."""
    t0 = time.monotonic()
    end = t0 + deadline_s
    seen: int | None = None
    while True:
        seen = partition_counts(adapter, [name]).get(name)
        if seen == partitions:
            seen_running_for(adapter, name, COORDINATOR_MARGIN_S)
            return time.monotonic() - t0
        if time.monotonic() > end:
            want = "gone" if partitions is None else f"{partitions} partitions"
            raise TargetError(
                f"{adapter.bootstrap}: topic {name} not {want} within {deadline_s:g}s (Metadata: {seen})"
            )
        time.sleep(0.05)


def seen_running_for(adapter: Any, name: str, margin_s: float, poll_s: float = 0.05) -> float:
    """Wait until the target has been seen running for ``margin_s`` without a pause; seconds waited.

    Metadata showing a topic change is the broker's metadata cache; the group coordinator learns it
    from its own event (`onNewMetadataImage`, module docstring), which runs some time later. A fixed
    sleep is not that time when the broker is paused during it (a stall of the JVM stops the
    coordinator's thread too): a heartbeat sent after the sleep may then meet a coordinator that has
    not seen the topic and gets an empty assignment (seen under `benchmarks/oracle_false_alarms.py`'s
    broker stalls: `oracle.ConsumerGroupHeartbeat` "no legal uniform assignment"). So the
    margin is counted on evidence: Metadata answers ``poll_s`` apart, a silence longer than
    ``poll_s + RUNNING_GAP_S`` between two answers restarts it; at most `RUNNING_CAP_S`."""
    t0 = time.monotonic()
    start = last = t0
    while True:
        now = time.monotonic()
        if now - start >= margin_s or now - t0 >= RUNNING_CAP_S:
            return now - t0
        time.sleep(poll_s)
        partition_counts(adapter, [name])
        answered = time.monotonic()
        if answered - last > poll_s + RUNNING_GAP_S:
            start = answered  # the target was paused: the margin counts from here
        last = answered


def create_partitions(adapter: Any, name: str, total: int, deadline_s: float = CHANGE_DEADLINE_S) -> float:
    """CreatePartitions ``name`` to ``total`` partitions; seconds until Metadata shows them."""
    version = _version(adapter, API_CREATE_PARTITIONS, 3, "CreatePartitions")
    cls = payload_class(API_CREATE_PARTITIONS, version, True)
    mod = module(API_CREATE_PARTITIONS, version, True)
    req = build(
        cls,
        {
            "topics": (
                build(mod.CreatePartitionsTopic, {"name": name, "count": total, "assignments": None}),
            ),
            "timeout": int(deadline_s * 1000) - 500,
            "validate_only": False,
        },
    )
    _check(_exchange(adapter, req, deadline_s).results, name, "CreatePartitions", adapter)
    return wait_until(adapter, name, total, deadline_s)


def delete_topic(adapter: Any, name: str, deadline_s: float = CHANGE_DEADLINE_S) -> float:
    """DeleteTopics ``name`` (by name); seconds until Metadata no longer lists it."""
    version = _version(adapter, API_DELETE_TOPICS, 6, "DeleteTopics")
    cls = payload_class(API_DELETE_TOPICS, version, True)
    mod = module(API_DELETE_TOPICS, version, True)
    if version >= 6:
        topics: dict[str, Any] = {"topics": (build(mod.DeleteTopicState, {"name": name, "topic_id": None}),)}
    else:
        topics = {"topic_names": (name,)}
    req = build(cls, {**topics, "timeout": int(deadline_s * 1000) - 500})
    _check(_exchange(adapter, req, deadline_s).responses, name, "DeleteTopics", adapter)
    return wait_until(adapter, name, None, deadline_s)


def _check(results: Any, name: str, what: str, adapter: Any) -> None:
    for r in results:
        if r.name == name:
            code = int(r.error_code.value)
            if code != 0:
                msg = getattr(r, "error_message", None)
                raise TargetError(f"{adapter.bootstrap}: {what} {name}: error {code} {msg or ''}".rstrip())
            return
    raise TargetError(f"{adapter.bootstrap}: the {what} answer does not mention topic {name}")


# ---------------------------------------------------------------------- a port's topics
def topic_ids_of(session: Any, names: list[str]) -> dict[str, Any]:
    """Topic ids by Metadata v12 on a fresh connection, cached per session (retried while a new
    topic's metadata propagates)."""
    from conformance.wire.connection import _blocking_exchange
    from conformance.wire.framing import decode_frame

    cache: dict[str, Any] = session.__dict__.setdefault("topic_ids", {})
    missing = [n for n in names if n not in cache]
    adapter = session.adapter
    lo, hi = adapter.connect().api_versions.get(3, (0, -1))
    version = min(12, hi)
    if version < max(10, lo):
        raise TargetError(f"{adapter.bootstrap}: no Metadata v10+ (topic ids, KIP-516); offers v{lo}-v{hi}")
    end = time.monotonic() + 30
    while missing:

        def exchange(req: Any) -> Any:
            frame = _blocking_exchange(adapter.host, adapter.port, req, adapter.timeout_s, adapter.client_id)
            value, findings = decode_frame(req.__api_key__, req.__version__, frame)
            if value is None:
                raise TargetError(f"{adapter.bootstrap}: Metadata answer is garbage: {findings[0].message}")
            return value

        try:
            cache.update(topic_ids(exchange, missing, version))
        except (OSError, ConnectionError) as e:
            raise TargetError(f"{adapter.bootstrap}: Metadata failed: {e}") from e
        missing = [n for n in names if n not in cache]
        if missing and time.monotonic() > end:
            break
        if missing:
            time.sleep(0.1)
    return {n: cache[n] for n in names if n in cache}


def seeded_topic(session: Any, topics: Any, topic: str, partitions: int) -> None:
    """Model topic ``topic`` on the run's shared real topic (created if missing) in ``topics`` (a
    `TopicMap`), for a target whose topics are seeded at start (the librdkafka mock) or a port that
    never changes them. The coordinator learns a new topic from its next metadata image (module
    docstring): counted while the target is seen running (`seen_running_for`)."""
    real = session.real_topic(topic, partitions)
    fresh = real not in session.__dict__.get("topic_ids", {})
    session.ensure_topic(real)
    ids = topic_ids_of(session, [real])
    if fresh:
        seen_running_for(session.adapter, real, TOPIC_PROPAGATION_S)
    if real not in ids:
        raise TargetError(f"{session.adapter.bootstrap}: Metadata does not list topic {real} with an id")
    topics.add(topic, real, ids[real])


def topic_owner(port: Any) -> str:
    """The tag a port's own topic names carry (its real group's last part)."""
    return str(port.real_group.rsplit("-", 1)[-1])


def change_on_target(port: Any, action: str, topic: str, partitions: int, own: bool) -> None:
    """The model's TopicEvent on the port's target (``own``: the target creates topics on request,
    so the port names its own, `fresh_name`; else the run's seeded ones, `seeded_topic`)."""
    session, adapter = port.session, port.adapter
    if action == "create" and not own:
        seeded_topic(session, port.topics, topic, partitions)
    elif action == "create":
        # a re-created topic keeps its name (members subscribe by name; Kafka gives it a new id)
        real = port.topics.real.get(topic) or fresh_name(session, topic, partitions, topic_owner(port))
        create_topic(session, real, partitions)
        # the coordinator learns a topic from the next metadata image (GMM onNewMetadataImage):
        # wait until Metadata lists it with leaders, plus the coordinator's margin
        wait_until(adapter, real, partitions)
        session.__dict__.setdefault("topic_ids", {}).pop(real, None)
        ids = topic_ids_of(session, [real])
        if real not in ids:
            raise TargetError(f"{session.adapter.bootstrap}: Metadata does not list topic {real} with an id")
        port.topics.add(topic, real, ids[real])
    elif action == "add_partitions":
        create_partitions(adapter, port.topics.real_name(topic), partitions)
    elif action == "delete":
        delete_topic(adapter, port.topics.real_name(topic))
    else:
        raise ValueError(f"unknown topic action {action!r}")

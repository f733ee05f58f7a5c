"""Every version of every classic group API that the target advertises and the model speaks is sent.

The classic machine draws each member's versions (conformance/protocols/classic/versions.py); a
seeded run must send exactly the advertised-and-supported (api, version) pairs: on the model, the
model's whole ranges; on Apache Kafka, what its ApiVersions answer leaves of them (KIP-896 removed
JoinGroup v0-v1 and OffsetCommit v0-v1 in Kafka 4.0, so those are sent at the lowest it keeps).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.engine.profiles import PROFILES
from conformance.engine.run import run_check
from conformance.protocols import get_kit
from conformance.protocols.classic.codec import api_key_of
from conformance.protocols.classic.versions import MODEL_VERSIONS, exercisable, resolve
from conformance.wire.codec import API_JOIN_GROUP, API_OFFSET_COMMIT, SUPPORTED
from conformance.wire.connection import Capabilities
from model.classic.port import ModelPort


class RecordingPort(ModelPort):
    """The model's port, noting the (api key, version) of every request it is sent."""

    sent: set[tuple[int, int]] = set()

    def send(self, ref: int, request: Any, now: int) -> Any:
        RecordingPort.sent.add((api_key_of(request), request.version))
        return super().send(ref, request, now)


def test_seeded_model_runs_send_every_supported_version() -> None:
    """Two ci-profile runs (commits and leaves are rare steps, so one run misses a few pairs)."""
    RecordingPort.sent = set()
    for seed, examples in ((2, 100), (3, 150)):
        result = run_check(
            "classic",
            profile=PROFILES["ci"],
            max_examples=examples,
            seed_value=seed,
            port_factory=RecordingPort,
        )
        assert result.violations == []
    want = exercisable(MODEL_VERSIONS, SUPPORTED)
    assert RecordingPort.sent == want, sorted(want - RecordingPort.sent)


def test_a_static_member_only_sends_versions_carrying_its_instance_id() -> None:
    v = resolve((0, 0, 0, 0, 2), static=True)
    assert (v.join, v.sync, v.heartbeat, v.leave, v.commit) == (5, 3, 3, 3, 7)
    assert resolve((0, 0, 0, 0, 2), static=False).join == 0


def test_a_version_outside_the_advertised_range_moves_to_the_nearest() -> None:
    kafka4 = Capabilities({API_JOIN_GROUP: (2, 9), API_OFFSET_COMMIT: (2, 9)}, True)
    assert kafka4.nearest(API_JOIN_GROUP, 0) == 2
    assert kafka4.nearest(API_JOIN_GROUP, 7) == 7
    kafka09 = Capabilities({API_JOIN_GROUP: (0, 0)}, False)
    assert kafka09.nearest(API_JOIN_GROUP, 9) == 0
    assert kafka09.nearest(API_OFFSET_COMMIT, 8) is None


@pytest.fixture(scope="module")
def kafka() -> Iterator[object]:
    from conformance.targets.open import open_target

    with open_target("apache-kafka") as handle:
        yield handle


@pytest.mark.target
def test_a_seeded_apache_kafka_run_sends_every_advertised_version(kafka: Any) -> None:
    from conformance.cli.check import REAL_PROFILES

    inner = get_kit("classic").real_setup(kafka, REAL_PROFILES["dev"])[0]
    ports: list[Any] = []

    def factory(coord: Any) -> Any:
        ports.append(inner(coord))
        return ports[-1]

    result = run_check(
        "classic",
        target="apache-kafka",
        profile=REAL_PROFILES["dev"],
        max_examples=4,
        seed_value=3,
        port_factory=factory,
        config=kafka.model_config,
        real_time=True,
    )
    assert result.violations == [], result.steps
    sent = {(api_key_of(req), version) for p in ports for (_, req, version, _) in p.requests.values()}
    advertised = ports[0].adapter.connect().api_versions
    want = exercisable(advertised, SUPPORTED)
    assert sent == want, sorted(want - sent)


def test_a_session_timer_armed_early_is_caught_and_the_model_passes() -> None:
    """The timer lower bound (classic.timers_not_early) has teeth: the session-timer-halved mutant
    re-arms expiry half a session ahead; the reference model never does."""
    caught = run_check(
        "classic",
        profile=PROFILES["ci"],
        max_examples=30,
        seed_value=1,
        variants={"mutant": "session-timer-halved"},
        shrink=False,
    )
    assert {v.invariant for v in caught.violations} == {"classic.timers_not_early"}
    model = run_check("classic", profile=PROFILES["ci"], max_examples=30, seed_value=1)
    assert model.violations == []

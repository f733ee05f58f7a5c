"""The mixed oracle adopts Kafka's assignor choices as the consumer oracle does (seed-1 faults).

Regressions of the two `--protocol all --profile faults --seed 1` traces on Apache Kafka 4.4.0
(`reports/conformance/faults/apache-kafka.mixed.all-seed1-*.ndjson`; compact copies in
`tests/recorded/`, the recorded requests and answers unchanged). Both runs: classic c1 and consumer
k2 share the group, classic c3 joins, c1's next request is held on the wire so its session expires,
static classic member c4 joins and rejoins at epoch 5. The new target (4 partitions, 3 members) is
the uniform assignor's free choice (docs/protocol-reference.md#f):

* `k2-assignment`: Kafka gave k2 {t-0, t-2}, c4 {t-1}. The model's target gave c4 {t-0, t-1} and its
  JoinGroup reconciled c4 to both at once; a JoinGroup answer shows only the generation (GMM
  ``classicGroupJoinToConsumerGroup``, apache/kafka@1eb7644 L2030-2081), so nothing had revealed
  that choice, but the oracle could not take t-0 back from c4 and reported k2's answer as
  unexplained (`oracle.ConsumerGroupHeartbeat`).
* `stable-not-target`: Kafka kept k2 at {t-2} (answer without assignment: unchanged, k2 reconciled at
  epoch 5) and gave c3 {t-0, t-3}. Adopting c4's {t-1} at its SyncGroup, the mixed oracle moved t-0
  into k2's target though k2's answer had shown its whole target: the model's group turned stable
  with k2 short of its target (`consumer.valid_stable_group_state`).

The mixed oracle now keeps what answers revealed (`consumer_oracle.pin_revealed`,
`adoption_constraints`, `install_target`, shared with the consumer oracle) and reconciles again a
classic member whose JoinGroup partitions no answer has shown (`MixedOraclePort._rereconcile`).
The runs are replayed against their recorded answers (`conformance.protocols.mixed.recorded`), no broker.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from conformance.formats.trace_file import read_trace
from conformance.protocols.mixed.recorded import recorded_exchanges, replay_recorded
from model.consumer.messages import ConsumerGroupHeartbeatResponse, TopicPartitions
from model.embedded import Assignment, encode_assignment

HERE = Path(__file__).parent / "recorded"
K2 = HERE / "apache-kafka.mixed.all-seed1-k2-assignment.ndjson"
STABLE = HERE / "apache-kafka.mixed.all-seed1-stable-not-target.ndjson"


def _ids(result: object) -> list[str]:
    return sorted({v.invariant for v in result.violations})  # type: ignore[attr-defined]


def test_kafkas_choice_revealed_by_another_members_heartbeat_redoes_an_unseen_classic_reconciliation() -> (
    None
):
    result = replay_recorded(K2)
    assert result.error is None and result.exact, (result.error, result.difference)
    assert result.verdict == "FIXED", [(v.step, v.invariant, v.message[:160]) for v in result.violations]
    # Kafka's choice at k2's answer (ref 55) is followed: adopted, or a tie-break hypothesis
    # (`assignor_ties`) that gave the same; either way a kafka-compat note and k2 at {t-0, t-2}
    compat = [f.message for f in result.sim.port.session.compat]
    assert any(m.startswith("ref 55: ") for m in compat), compat
    group = result.sim.port.state().consumer.groups["g"]
    assert group.target_of("NecJsuy8SviCmCXnHvcGcw") == frozenset({("t", 0), ("t", 2)})


def test_a_target_an_answer_revealed_is_kept_by_a_later_adoption() -> None:
    result = replay_recorded(STABLE)
    assert result.error is None and result.exact, (result.error, result.difference)
    assert result.verdict == "FIXED", [(v.step, v.invariant, v.message[:160]) for v in result.violations]
    group = result.sim.port.state().consumer.groups["g"]
    assert group.target_of("NecJsuy8SviCmCXnHvcGcw") == frozenset({("t", 2)})  # as its answer showed
    assert group.target_of("q9NIcHNZSJy0R3mfKOg0kw") == frozenset({("t", 0), ("t", 3)})


def _tampered(path: Path, ref: int, change: object) -> object:
    """The trace with the recorded answer under ``ref`` replaced by ``change(answer)``."""
    trace = read_trace(path)
    for step in trace.steps:
        if getattr(step.event, "ref", None) == ref and step.actual:
            step.actual = tuple(dataclasses.replace(d, response=change(d.response)) for d in step.actual)  # type: ignore[arg-type]
    return trace


def test_an_illegal_choice_in_the_same_place_is_still_a_finding() -> None:
    """Teeth: k2 given three of the four partitions at epoch 5 (uniform over three homogeneous
    members allows two at most) is no legal target, whatever c4's JoinGroup did."""

    def greedy(answer: ConsumerGroupHeartbeatResponse) -> ConsumerGroupHeartbeatResponse:
        assert answer.assigned() == frozenset({("t", 0), ("t", 2)})
        return dataclasses.replace(answer, assignment=(TopicPartitions("t", (0, 1, 2)),))

    ref = next(r for r, rec in recorded_exchanges(read_trace(K2)).items() if rec.step == 88)
    result = replay_recorded(_tampered(K2, ref, greedy))  # type: ignore[arg-type]
    # the member then owns what the recording never saw, so the replay leaves it (an ERROR) after the finding
    assert result.verdict in ("FAILED", "ERROR")
    assert "oracle.ConsumerGroupHeartbeat" in _ids(result), _ids(result)
    assert any(f"ref {ref}" in v.message for v in result.violations)


def test_a_partition_a_pinned_member_cannot_take_is_still_a_finding() -> None:
    """Teeth for the pins: when c3's SyncGroup gives it only {t-3}, t-0 would have to be k2's, but k2's
    epoch-5 answer showed its whole target ({t-2}) and c4's SyncGroup showed c4's ({t-1}): no legal
    target is left, an `oracle.SyncGroup` finding (before the pins the oracle moved t-0 to k2)."""
    trace = read_trace(STABLE)
    ref = next(
        r
        for r, rec in recorded_exchanges(trace).items()
        if type(rec.request).__name__ == "SyncGroupRequest" and rec.member == "c3" and rec.step == 97
    )

    def short(answer: object) -> object:
        return dataclasses.replace(answer, assignment=encode_assignment(Assignment((("t", 3),)), 3))  # type: ignore[type-var]

    result = replay_recorded(_tampered(STABLE, ref, short))  # type: ignore[arg-type]
    assert result.verdict == "FAILED"
    assert "oracle.SyncGroup" in _ids(result), _ids(result)


def test_a_run_that_leaves_its_recording_is_an_error_not_a_verdict() -> None:
    trace = read_trace(K2)
    first = next(s for s in trace.steps if getattr(s.event, "ref", None) is not None)
    first.event = dataclasses.replace(first.event, client="k9")
    result = replay_recorded(trace)
    assert result.verdict == "ERROR" and "the recording" in (result.error or ""), result.error


def test_replay_against_the_recording_from_the_command_line(capsys: object) -> None:
    from conformance.cli.main import main

    assert main(["replay", str(K2), "--target", "recording"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "on recording" in out and ": FIXED" in out and "exact" in out

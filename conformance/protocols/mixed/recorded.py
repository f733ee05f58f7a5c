"""A mixed trace recorded on a real target, replayed against the target's RECORDED answers (docs/oracle.md#recorded).

`groupcheck replay FILE --target apache-kafka` runs a trace again on a live broker, on a real
clock: a divergence that depends on timing may or may not come back (the seed-1 `--profile faults`
traces replayed FIXED before anything was fixed, their replays departing from the
recording at the first tick). To study what the mixed oracle makes of one recorded run, this module
runs the trace's ops on `RealMixedRun` as a replay does, but behind `RecordedMixedPort`: every
request is checked against the one recorded under its ref, is sent at its recorded moment (the
port's clock jumps there) and is answered with the answer the target gave, a few ms later. The
oracle, its hypotheses and adoptions, the timer splits and the invariant checks are the real ones;
only the wire is a recording. So the verdict is a pure function of the trace: what the oracle says
about that run, every time.

A replayed run that asks for something the recording does not hold (another request under a ref,
a ref never recorded) stops with `RecordingDiverged` naming the step: the recording answers only
the run it recorded. Wire faults are not re-enacted: a held request is just not sent (a release is
sent at its recorded moment), and a trace with lost, cut or duplicated requests or a coordinator
restart is refused.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from conformance.errors import ToolError
from conformance.formats.trace_file import Trace, read_trace
from conformance.protocols.mixed.oracle import MixedOraclePort
from model.consumer.messages import ConsumerGroupHeartbeatRequest
from model.consumer.world import AdvanceEvent

#: how long after its recorded send a recorded answer arrives (the trace keeps the send time only)
ANSWER_MS = 3
#: how much later than its tick's clock reading a tick's step may be dated (`recorded_ticks`)
TICK_SLACK_MS = 2
#: how much later than its step a request may have been sent (`send_moments`)
SEND_SLACK_MS = 5
#: ops whose effect a recording cannot re-enact: wire faults but a held request (module docstring), restarts
UNREPLAYABLE_OPS = frozenset({"lose_response", "cut_connection", "duplicate_request", "failover"})


class RecordingDiverged(ToolError):
    """The replayed run asked for something the recording does not hold."""


@dataclass(frozen=True)
class Recorded:
    """One recorded exchange: when the request was sent, the request, the target's answer (None: none)."""

    step: int
    sent_ms: int
    member: str
    request: Any
    answer: Any


def recorded_exchanges(trace: Trace) -> dict[int, Recorded]:
    """Each request the trace's steps record, by ref, with the target's answer."""
    out: dict[int, Recorded] = {}
    for step in trace.steps:
        ev = step.event
        request = getattr(ev, "request", None)
        ref = getattr(ev, "ref", None)
        if request is None or ref is None:
            continue
        answer = next((d.response for d in step.actual or () if getattr(d, "ref", None) == ref), None)
        out[int(ref)] = Recorded(step.n, step.now, str(getattr(ev, "client", "?")), request, answer)
    return out


def recorded_ticks(trace: Trace) -> list[int]:
    """The moments of the trace's ticks: advance observations to the clock of their own step (the
    step's time is read a moment later: up to ``TICK_SLACK_MS``); a timer split (`timer_split`) is
    an advance to the model time of a timer, earlier."""
    return sorted(
        {
            s.event.now
            for s in trace.steps
            if isinstance(s.event, AdvanceEvent) and 0 <= s.now - s.event.now <= TICK_SLACK_MS
        }
    )


def send_moments(recording: dict[int, Recorded], ticks: list[int]) -> dict[int, int]:
    """When each recorded request reached the oracle's clock. A step is dated a moment before its
    request is sent, and a consumer-protocol member schedules its next heartbeat from that send
    (`VirtualConsumer.on_response`: the answer's interval after it), so a member that let a tick pass
    without heartbeating sent a little later than its step says: at least just past that tick less
    the interval (up to ``SEND_SLACK_MS`` later). Every other request is taken at its step's time."""
    out = {ref: rec.sent_ms for ref, rec in recording.items()}
    by_member: dict[str, list[int]] = {}
    for ref in sorted(recording):
        by_member.setdefault(recording[ref].member, []).append(ref)
    for refs in by_member.values():
        for ref, nxt in zip(refs, refs[1:], strict=False):
            rec, answer = recording[ref], recording[ref].answer
            interval = getattr(answer, "heartbeat_interval_ms", 0) or 0
            if not isinstance(rec.request, ConsumerGroupHeartbeatRequest) or interval <= 0:
                continue
            own = max((t for t in ticks if t <= recording[nxt].sent_ms), default=0)  # the next one's tick
            skipped = [t for t in ticks if rec.sent_ms < t < own]
            if skipped:
                need = skipped[-1] - interval + 1
                if 0 < need - rec.sent_ms <= SEND_SLACK_MS:
                    out[ref] = need
    return out


class RecordedMixedPort(MixedOraclePort):
    """`MixedOraclePort` whose target is a recording (module docstring); set ``recording`` first."""

    recording: dict[int, Recorded]
    #: the recorded moments of the run's ticks (`RealMixedRun.tick`'s advance observations)
    ticks: list[int]
    #: when each request is sent (`send_moments`), by ref
    sent: dict[int, int]

    def __post_init__(self) -> None:
        super().__post_init__()
        self.fake_now = 0

    # ---------------------------------------------------------------- the clock is the recording's
    def clock(self) -> int:
        return self.fake_now

    def sleep_until(self, ms: int) -> None:
        """To the first recorded tick at or after ``ms``: a real sleep ends at or after its mark, and
        the run asks for the same marks as the recorded one (the previous tick plus ``tick_ms``)."""
        later = [t for t in self.ticks if t >= ms]
        self.fake_now = max(self.fake_now, later[0] if later else ms)

    # ---------------------------------------------------------------- the wire is the recording
    def create_topic(self, topic: str, partitions: int) -> None:
        self.topics.add(topic, f"recorded-{topic}", uuid.uuid5(uuid.NAMESPACE_OID, topic))
        for h in self.hypos:
            self.coords[h.origin].create_topic(h.state, topic, partitions)

    def exchange(self, member: str, request: Any, ref: int) -> Any:
        rec = self.recording.get(ref)
        if rec is None:
            raise RecordingDiverged(f"the replayed run sends ref {ref} ({member}), which the recording lacks")
        if rec.member != member or rec.request != request:
            raise RecordingDiverged(
                f"step {rec.step}: the replayed run sends {member}'s {type(request).__name__} as ref {ref}, "
                f"the recording {rec.member}'s {type(rec.request).__name__}"
            )
        self.fake_now = max(self.fake_now, self.sent[ref])
        return super().exchange(member, request, ref)

    def _encode(self, request: Any) -> tuple[int, int, Any]:
        key = 68 if isinstance(request, ConsumerGroupHeartbeatRequest) else 0
        return key, getattr(request, "version", 0), request

    def _submit(self, member: str, payload: Any, ref: int) -> None:
        self._pending = (payload, 0)

    def _await(self, ref: int, t: int) -> tuple[Any, int]:
        answer = self.recording[ref].answer
        return answer, t + ANSWER_MS

    def close(self) -> None:
        return None


def recorded_port(trace: Trace) -> RecordedMixedPort:
    """The oracle port for ``trace`` with the model set up as for the recorded target (its
    launcher's default settings; the recorded migration policy stated)."""
    from conformance.protocols.mixed.oracle import mixed_config
    from conformance.targets import _target_class
    from conformance.targets.open import _model_config_from, launched_settings
    from model.choice import SeededChooser
    from model.mixed.coordinator import MixedCoordinator

    name = str(trace.header.get("target", {}).get("name", ""))
    try:
        settings = dict(_target_class(name).default_settings(None))  # type: ignore[arg-type]
    except Exception as exc:  # noqa: BLE001 - an unknown target in a header is a usage error
        raise ToolError(
            f"{trace.path}:1: target {name!r} has no launcher settings to set the model up: {exc}"
        ) from None
    policy = trace.header.get("setup", {}).get("policy")
    if policy:
        settings["group.consumer.migration.policy"] = policy
    handle = SimpleNamespace(
        launcher=SimpleNamespace(settings=settings),
        model_config=_model_config_from(settings, []),
        settings=launched_settings(settings),
        notes=[],
        session=None,
    )
    session = SimpleNamespace(
        adapter=SimpleNamespace(alive=lambda: True, drop_member=lambda member: None),
        next_group=lambda: "recorded-g",
        launcher=None,
        compat=[],
        rtt_ms=[],
    )
    seed = int(trace.header.get("setup", {}).get("seed", 0))
    port = RecordedMixedPort(
        MixedCoordinator(mixed_config(handle), SeededChooser(seed)), session, policy_known=True
    )  # type: ignore[arg-type]
    port.recording = recorded_exchanges(trace)
    port.ticks = recorded_ticks(trace)
    port.sent = send_moments(port.recording, port.ticks)
    return port


def replay_recorded(path: Path | Trace) -> Any:
    """Replay a mixed trace against its own recorded answers: a `ReplayResult` (verdict as `replay`)."""
    from conformance.engine.replay import ReplayResult
    from conformance.engine.replay import take_port_findings as _take_port_findings
    from conformance.engine.replay import verdict as _verdict
    from conformance.protocols.mixed.realtime import real_mixed_run
    from conformance.protocols.mixed.replay import replay_mixed_ops

    trace = path if isinstance(path, Trace) else read_trace(path)
    if trace.protocol != "mixed":
        raise ToolError(f"{trace.path}:1: only mixed-group traces replay against their recording")
    for step in trace.steps:
        if step.action.get("op") in UNREPLAYABLE_OPS:
            raise ToolError(
                f"{trace.path}:{step.line}: {step.action['op']!r} cannot be replayed from a recording"
            )
    port = recorded_port(trace)
    kept = {k: v for k, v in trace.header.get("variants", {}).items() if k != "mixed_mutant"}
    result = ReplayResult(trace, "recording", kept)
    run = real_mixed_run(port, dict(trace.header["setup"]), kept)
    result.sim = run
    if not replay_mixed_ops(trace, result, run, lambda steps: _take_port_findings(result, run, steps[-1].n)):
        _take_port_findings(result, run, trace.steps[-1].n if trace.steps else 0)  # what led there
        return result
    return _verdict(result, False)


__all__ = ["RecordedMixedPort", "RecordingDiverged", "recorded_exchanges", "replay_recorded"]

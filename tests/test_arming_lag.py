"""A timer the target armed late (a stalled heartbeat) is not certainly due when the model's copy is
(`HypothesisFindings._certain_cutoff`). No broker: the target is the scripted
port of `test_timer_split`, here with stalls. Kafka arms a session timeout when it handles the
heartbeat (GroupMetadataManager ``scheduleConsumerGroupSessionTimeout``, a relative delay), the model
when the heartbeat was sent; under `benchmarks/oracle_false_alarms.py --stall 0.8` the difference
was 787 ms, and the oracle declared the model's deadline certainly passed because Kafka had answered
a request sent after it, refuting the only hypothesis that explained Kafka's next answer (consumer ci
seed 2, `benchmarks/results/oracle_false_alarms.md`, "Consumer ci seed 2 under load")."""

from __future__ import annotations

from typing import Any

from test_timer_split import SESSION_MS, ScriptedConsumerPort, scripted_sim

from conformance.protocols.consumer.oracle import HypothesisFindings
from model.consumer.messages import ConsumerGroupHeartbeatRequest

ARM_LAG = 785  # c1's last heartbeat: handled (and its session armed) this long after it was sent


def _pre_fix_cutoff(self: Any, t: int) -> int:
    """The rule before the fix: seen running at a send after the model's deadline was enough."""
    answered = self.__dict__.get("answered", [])
    lag = max((a - s for s, a in answered[-32:]), default=0)
    cutoff = t - max(self.timing.late_ms, lag + self.seen_margin_ms)
    running = max(
        (s for s, a in answered if a <= t - self.seen_margin_ms), default=cutoff - self.unseen_cap_ms
    )
    return int(max(min(cutoff, running), t - self.unseen_cap_ms))


def _stalling(port: ScriptedConsumerPort, plan: dict[int, tuple[int, int, bool]]) -> None:
    """Answer the request sent at port ms ``t`` per ``plan[t]`` = (handled after, answered after,
    the target's due timers fire first); other requests are handled at once, timers first."""

    def await_(ref: int, t: int) -> tuple[Any, int]:
        handled, answered, timers_first = plan.get(t, (0, 5, True))
        at = t + handled
        if timers_first:
            port.reference.advance(port.reference_state, at)
        request = port.pending
        assert isinstance(request, ConsumerGroupHeartbeatRequest)
        result = port.reference.handle_consumer_group_heartbeat(port.reference_state, request, ref, at)
        port.fake_now = max(port.fake_now, t + answered)
        return next(d.response for d in result.deliveries if d.ref == ref), t + answered

    port._await = await_  # type: ignore[method-assign]


def _run(rule: Any = None) -> tuple[list[str], ScriptedConsumerPort, list[int]]:
    """c1 and c2 share two partitions; c1's last heartbeat (at t0) is handled ``ARM_LAG`` late, then
    only c2 heartbeats: promptly, also past the model's deadline of c1's session (t0 + 2000), then
    at t0 + 2830 during a stall that the target ends by handling c2's request before c1's expiry
    (due at t0 + 2785 in the target: the race of `_certain_cutoff`), then once more after it.
    Returns the oracle's findings, the port and c2's member epoch after each of its heartbeats."""
    sim, port = scripted_sim(("c1", "c2"), partitions=2)
    port.adapter.alive = lambda: True
    if rule is not None:
        port._certain_cutoff = rule.__get__(port)  # type: ignore[method-assign]
    for _ in range(10):  # join, reconcile and heartbeat for a second
        for name in ("c1", "c2"):
            sim.client_step(name)
        port.sleep_until(port.clock() + 100)
    t0 = port.clock() + 500
    plan = {t0: (ARM_LAG, ARM_LAG, True), t0 + 2830: (0, 770, False)}
    _stalling(port, plan)
    epochs: list[int] = []
    port.sleep_until(t0)
    assert sim.client_step("c1") is not None
    for at in (t0 + 800, t0 + 1300, t0 + 1800, t0 + 2300, t0 + 2830, t0 + 4100):
        port.sleep_until(at)
        assert sim.client_step("c2") is not None, at
        epochs.append(sim.client("c2").member_epoch)
    return [f.rule + ": " + f.message for f in port.take_findings()], port, epochs


def test_a_late_armed_session_stays_uncertain_until_seen_past_its_target_deadline() -> None:
    found, port, epochs = _run()
    assert found == []
    # the target expired c1 only after the stalled request: c2's epoch moved at the last heartbeat
    assert epochs[4] == epochs[0] and epochs[5] > epochs[4], epochs
    members = set(port.reference_state.groups["g"].members)
    assert len(members) == 1 and set(port.hypos[0].state.groups["g"].members) == members


def test_the_pre_fix_rule_refutes_the_target() -> None:
    """Teeth: with the rule before the fix the same run is a false divergence at the stalled request."""
    found, _port, _epochs = _run(_pre_fix_cutoff)
    assert found and found[0].startswith("oracle.ConsumerGroupHeartbeat"), found
    assert "no model hypothesis explains it" in found[0], found


def test_the_cutoff_is_the_shared_rule() -> None:
    """The mixed oracle uses the same rule (it inherits `HypothesisFindings`)."""
    from conformance.protocols.mixed.oracle import MixedOraclePort

    assert MixedOraclePort._certain_cutoff is HypothesisFindings._certain_cutoff
    assert SESSION_MS == 2000  # the scenario's times above assume it

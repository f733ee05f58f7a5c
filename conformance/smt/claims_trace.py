"""A client-side z3 counterexample (KIP-341 claims, KIP-429 adjustment) as a replayable trace.

The solver's witness is one assignor call: the members' subscriptions. It is played through the
classic protocol so the leader's own assignor makes the call: ``c0`` is a virtual consumer on the
registered mutant with the broken rule (`kafka-7026`: sticky user data V0; `kafka-14639`: no
cooperative adjustment), it joins first and so leads; ``c1..`` send JoinGroup (v3) with the
witness's subscription bytes (their claims or owned partitions and generations) and never act
again; time then runs to the join deadline and the leader computes the assignment. The suite's
`Checker` runs the client invariants on that call (`conformance.engine.checker.client_observation`).
The witness is shaped so member 0 claims nothing: it is the fresh leader.
"""

from __future__ import annotations

from collections.abc import Mapping

from conformance.engine.checker import Checker, Violation
from conformance.formats.trace_file import Trace
from conformance.protocols.build import make_classic_sim
from conformance.protocols.classic.trace import to_trace
from conformance.smt.counterexample import proof_trace
from model.classic.messages import JoinGroupRequest
from model.embedded import Subscription, encode_subscription

GROUP = "g"
MUTANT = {"sticky": "kafka-7026", "cooperative_adjust": "kafka-14639"}
"""The registered mutant (``--variant mutant=NAME``) with the broken variant's rule."""


def mutant_variants(variant: Mapping[str, str]) -> dict[str, str]:
    broken = [MUTANT[k] for k, v in sorted(variant.items()) if k in MUTANT and v in ("v0", "false")]
    return {"mutant": broken[0]} if broken else {}


def trace_of(
    invariant_id: str,
    assignor: str,
    topic: str,
    partitions: int,
    subscriptions: Mapping[str, Subscription],
    variant: Mapping[str, str],
) -> tuple[Trace, list[Violation]]:
    """Members ``m1..`` of ``subscriptions`` join with their bytes; ``m0`` is the leader, ``c0``."""
    names = sorted(subscriptions, key=lambda m: int(m[1:]))
    variants = mutant_variants(variant) or {"assignor": assignor}
    clients = [{"name": f"c{m[1:]}", "topics": [topic]} for m in names]
    sim = make_classic_sim({topic: partitions}, clients, {}, variants, where="prove")
    checker = Checker("classic")
    violations: list[Violation] = []

    def judge(obs: object) -> None:
        found = checker.check(obs, len(sim.log))  # type: ignore[arg-type]
        sim.note_checks(obs, checker.last_checked, [(v.invariant, v.message) for v in found], ())  # type: ignore[arg-type]
        violations.extend(found)

    leader = sim.clients["c0"]
    for _ in range(3):  # KIP-394: the first JoinGroup may come back MEMBER_ID_REQUIRED
        obs = sim.client_step("c0")
        if obs is not None:
            judge(obs)
        if leader.member_id and leader.inflight is not None:
            break
    for m in names[1:]:
        request = JoinGroupRequest(
            GROUP,
            "",
            "consumer",
            ((assignor, encode_subscription(subscriptions[m])),),
            leader.config.session_timeout_ms,
            leader.config.rebalance_timeout_ms,
            client_id=f"c{m[1:]}",
            version=3,
        )
        judge(sim.send_raw(f"c{m[1:]}", request))
    group = sim.port.state.groups.get(GROUP)  # type: ignore[attr-defined]
    timers = {} if group is None else group.timers
    deadlines = [t.deadline for k, t in timers.items() if k in ("join", "initial")]
    judge(sim.advance(max(0, min(deadlines, default=sim.now) - sim.now)))
    trace = proof_trace(to_trace, sim, invariant_id, violations)
    return trace, violations

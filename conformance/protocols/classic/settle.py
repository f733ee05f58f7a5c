"""Time running with members acting: settle rounds and the convergence of a classic group.

Shared by the machine, scenarios, explore and the traced simulator's ``converge`` op
(conformance/protocols/classic/trace.py); it drives a `ClassicSim` and imports nothing of the kit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from model.classic.sim import ClassicSim


def quiet_gap(sim: ClassicSim, tick_ms: int = 100) -> int:
    """How far virtual time may run when no member has protocol work to do.

    Up to the next coordinator timer or request timeout, but never longer than a third of a running
    member's session timeout (the Java consumer's default heartbeat cadence), so idle time never
    expires a member that would have heartbeated.
    """
    world, now = sim.world, sim.now
    gaps: list[int] = []
    if world is not None and world.group is not None:
        gaps += [d - now for _, d in world.group.timers]
    gaps += [sent + sim.request_timeout_ms - now for _, sent in sim.awaiting.values()]
    running = [c for n, c in sim.clients.items() if n not in sim.stalled and c.member_id]
    gaps += [c.config.session_timeout_ms // 3 for c in running]
    return max(0, min(gaps)) if gaps else tick_ms


def settle_round(sim: ClassicSim, names: list[str], observe: Callable[[Any], None]) -> None:
    """Every named member acts once; if none had protocol work beyond a heartbeat, time runs on."""
    from model.classic.messages import HeartbeatRequest

    busy = False
    for name in names:
        obs = sim.client_step(name)
        if obs is not None:
            observe(obs)
            request = getattr(obs.event, "request", None)  # None: the request was held (DelayRequest)
            busy = busy or not isinstance(request, HeartbeatRequest)
    if not busy:
        observe(sim.advance(quiet_gap(sim)))


#: at most this many rounds in one convergence (a group that rebalances for ever hits it, and
#: then time jumps to the bound, where `classic.eventual_convergence` judges it)
CONVERGE_MAX_ROUNDS = 2_000


def classic_converge_bound(sim: ClassicSim) -> int:
    """Long enough for every perturbation to wash out: an unanswered request times out, silent
    members expire (session timeout), the initial delay passes, and two rebalances complete (a
    cooperative one needs a second, KIP-429)."""
    specs = [c.config for c in sim.clients.values()]
    session = max((c.session_timeout_ms for c in specs), default=0)
    rebalance = max((c.rebalance_timeout_ms for c in specs), default=0)
    delay = sim.port.initial_rebalance_delay_ms
    return int(sim.request_timeout_ms + session + delay + 2 * rebalance)


def converge(sim: ClassicSim, names: list[str], observe: Callable[[Any], None]) -> None:
    """Perturbations stop: stalled members resume, held requests arrive, armed faults are
    disarmed; members act and time runs until the bound has passed (`classic.eventual_convergence`
    judges every step from then on)."""
    bound = classic_converge_bound(sim)
    observe(sim.quiet(bound))
    for name in sorted(sim.stalled):
        observe(sim.stall(name, False))
    for name in sorted(sim.held):
        obs = sim.release(name)
        if obs is not None:
            observe(obs)
    end = (sim.quiet_since or sim.now) + bound
    rounds = 0
    while sim.now <= end and rounds < CONVERGE_MAX_ROUNDS:
        settle_round(sim, names, observe)
        rounds += 1
    if sim.now <= end:
        observe(sim.advance(end + 1 - sim.now))
    for name in names:  # one more round judged past the bound
        obs = sim.client_step(name)
        if obs is not None:
            observe(obs)
    observe(sim.quiet(None))

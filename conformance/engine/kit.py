"""What the engine needs from a protocol: one `ProtocolKit` object per protocol.

The engine (run, replay, minimise, polish, coverage, explore, swarm, mutants, reports, CLI) reaches a
protocol only through its kit, the way a schema-driven API tester reaches an API only through its
schema. Adding a protocol means writing a package under `conformance/protocols/` that builds a kit
and listing it in `conformance/protocols/__init__.py`; no engine module names a protocol.

The engine sits below the protocols, so it never imports them: a caller hands it a kit, or a
protocol name that `resolve` finds among the kits `conformance.protocols` installed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.errors import UsageError


@dataclass(frozen=True)
class ProtocolKit:
    """One protocol as the engine sees it.

    Required: the name, the Hypothesis machine and the trace recorder. The rest are optional capabilities; the engine says "not offered by this
    protocol" (a tool error) when one is absent.
    Each callable is imported lazily by the kit's module so that listing the kits stays cheap.
    """

    #: the name used on the command line and in traces (``--protocol NAME``, header ``protocol``)
    name: str
    #: one line for ``--help`` and reports
    summary: str
    #: ``make_machine(settings) -> type[RuleBasedStateMachine]`` for `conformance.engine.machine`'s
    #: ``MachineSettings``; its machines raise that module's ``InvariantViolation``
    make_machine: Callable[[Any], type]
    #: ``to_trace(sim, *, target, target_version, origin, violations) -> Trace``
    to_trace: Callable[..., Any]
    #: ``checks() -> CheckPlan``: what the checker runs besides this protocol's own invariants
    checks: Callable[[], Any] = field(default=lambda: None)
    #: `--variant` keys only this protocol reads (`conformance.engine.variants.VariantKey`)
    variants: tuple[Any, ...] = ()
    #: invariant families a run report lists for this protocol, besides its own
    report_families: tuple[str, ...] = ()
    #: the oracle's per-request rules a real-target report lists (``oracle.<rule>``)
    oracle_rules: tuple[str, ...] = ()
    #: ``replay(trace, result, *, port_factory, exact, coverage, real) -> ReplayResult`` on the
    #: model (or through a port factory); ``result`` is the fresh result to fill
    replay: Callable[..., Any] | None = None
    #: ``replay_on_target(trace, spec, variants) -> (ReplayResult, notes)`` against a real coordinator
    replay_on_target: Callable[..., Any] | None = None
    #: ``replay_recorded(trace) -> ReplayResult``: the trace against its own recorded answers (no target)
    replay_recorded: Callable[..., Any] | None = None
    #: ``minimise_view(trace) -> trace``: the trace as single ops ddmin can cut (or itself)
    minimise_view: Callable[..., Any] | None = None
    #: ddmin may merge stretches of ``advance`` ops into one (`conformance.power.matrix.compress_time`)
    merge_advances: bool = False
    #: ``polish_space(trace) -> PolishSpace``: BFS root, apply, enabled ops, clone, key
    polish_space: Callable[..., Any] | None = None
    #: ``state_key(sim, symmetry=True) -> str``: the abstract state used by coverage, explore, swarm
    state_key: Callable[..., Any] | None = None
    #: the group states a coverage picture projects onto, in order, with their places
    coverage_places: tuple[tuple[str, ...], Mapping[str, tuple[int, int]]] | None = None
    #: ``explore(members, partitions, *, depth, variants, budget_s, ops, cpu_clock, perturbations,
    #: static, workers) -> ExploreResult`` (a search `conformance.engine.frontier.search` runs)
    #: (``ops`` None: the protocol's default alphabet)
    explore: Callable[..., Any] | None = None
    #: ``explore_trace(result, found) -> Trace``: an explored counterexample as a trace
    explore_trace: Callable[..., Any] | None = None
    #: ``run_scenario(scenario, variants, **kw) -> ScenarioResult``
    run_scenario: Callable[..., Any] | None = None
    #: ``swarm() -> SwarmHooks``: one seeded swarm run as lake rows (the pipeline)
    swarm: Callable[[], Any] | None = None
    #: ``real_setup(handle, profile) -> (port_factory, config, profile)`` against a target
    real_setup: Callable[..., Any] | None = None
    #: ``not_run_reason(handle) -> str | None``: why a real target cannot run this protocol
    not_run_reason: Callable[..., Any] | None = None
    #: ``model_port(coordinator)``: the in-process port around a model coordinator
    model_port: Callable[[Any], Any] | None = None
    #: ``mutants() -> {name: mutant}``: the model mutants of this protocol
    mutants: Callable[[], dict[str, Any]] = field(default=lambda: {})
    #: the variant key that names one of `mutants` (``--variant KEY=NAME``)
    mutant_key: str = "mutant"

    def require(self, capability: str) -> Callable[..., Any]:
        """The named optional capability, or a tool error saying this protocol does not offer it."""
        fn = getattr(self, capability)
        if fn is None:
            raise UsageError(f"protocol {self.name!r} does not offer {capability.replace('_', ' ')}")
        return fn  # type: ignore[no-any-return]


#: the kits `conformance.protocols` installed (its `KITS`, the one list of protocols)
_INSTALLED: dict[str, ProtocolKit] = {}


def install(kits: Mapping[str, ProtocolKit]) -> dict[str, ProtocolKit]:
    """Make ``kits`` the ones a protocol name resolves to; returns the live registry."""
    _INSTALLED.clear()
    _INSTALLED.update(kits)
    return _INSTALLED


def resolve(protocol: str | ProtocolKit) -> ProtocolKit:
    """The kit itself, or the installed kit of that name (a usage error naming the known ones)."""
    if isinstance(protocol, ProtocolKit):
        return protocol
    kit = _INSTALLED.get(protocol)
    if kit is None:
        if not _INSTALLED:
            raise UsageError(
                f"protocol {protocol!r}: no protocol kits installed (import conformance.protocols)"
            )
        raise UsageError(f"unknown protocol {protocol!r} (known: {', '.join(_INSTALLED)})")
    return kit

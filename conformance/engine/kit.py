"""What the engine needs from a protocol: one `ProtocolKit` object per protocol.

The engine (run, replay, minimise, polish, coverage, explore, swarm, mutants, reports, CLI) reaches a
protocol only through its kit, the way a schema-driven API tester reaches an API only through its
schema. Adding a protocol means writing a package under `conformance/protocols/` that builds a kit
and listing it in `conformance/protocols/__init__.py`; no engine module names a protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProtocolKit:
    """One protocol as the engine sees it.

    Required: the name, the Hypothesis machine and the trace recorder. The rest are optional
    capabilities; the engine says "not offered by this protocol" (a tool error) when one is absent.
    Each callable is imported lazily by the kit's module so that listing the kits stays cheap.
    """

    #: the name used on the command line and in traces (``--protocol NAME``, header ``protocol``)
    name: str
    #: one line for ``--help`` and reports
    summary: str
    #: ``make_machine(settings) -> type[RuleBasedStateMachine]``
    make_machine: Callable[[Any], type]
    #: ``to_trace(sim, *, target, target_version, origin, violations) -> Trace``
    to_trace: Callable[..., Any]
    #: ``replay(trace, result, port_factory, strict) -> ReplayResult`` on the model or a real port
    replay: Callable[..., Any] | None = None
    #: ``minimise_view(trace) -> (trace, restore)``: a trace flattened for ddmin and how to undo it
    minimise_view: Callable[..., Any] | None = None
    #: ``polish_space(trace) -> PolishSpace``: BFS root, apply, enabled ops, clone, key
    polish_space: Callable[..., Any] | None = None
    #: ``state_key(sim) -> hashable``: the abstract state used by coverage and explore
    state_key: Callable[..., Any] | None = None
    #: the group states a coverage picture projects onto, in order
    coverage_states: tuple[str, ...] = ()
    #: ``explore(...)``: exhaustive exploration of the model's abstract states
    explore: Callable[..., Any] | None = None
    #: ``run_scenario(scenario, variants) -> ScenarioResult``
    run_scenario: Callable[..., Any] | None = None
    #: ``swarm_row(...)``: one seeded swarm run as lake rows (the pipeline)
    swarm: Callable[..., Any] | None = None
    #: ``real_setup(handle, profile) -> (port_factory, config, profile)`` against a real coordinator
    real_setup: Callable[..., Any] | None = None
    #: ``not_run_reason(handle) -> str | None``: why a real target cannot run this protocol
    not_run_reason: Callable[..., Any] | None = None
    #: names of the model mutants of this protocol (``--target mutant:NAME``)
    mutants: Callable[[], dict[str, Any]] = field(default=lambda: {})

    def require(self, capability: str) -> Callable[..., Any]:
        """The named optional capability, or a tool error saying this protocol does not offer it."""
        from conformance.errors import UsageError

        fn = getattr(self, capability)
        if fn is None:
            raise UsageError(f"protocol {self.name!r} does not offer {capability.replace('_', ' ')}")
        return fn  # type: ignore[no-any-return]

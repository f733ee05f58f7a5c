"""Whether a target runs the classic group protocol, and the set-up of a classic run on it
(docs/real-targets.md).

`not_run_reason` says why it cannot (ApiVersions lists no JoinGroup); `classic_setup` gives the
classic machine its port factory (the oracle port on a real target; on an in-process mutant
target the mutant's coordinator and port) and the model settings the target was started with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.engine.profiles import Profile
from conformance.mutants import get_mutant


def not_run_reason(handle: Any) -> str | None:
    caps = handle.capabilities
    if caps is not None and "classic" not in caps.features:
        return "not offered: the target does not offer the classic group protocol (JoinGroup)"
    return None


def classic_setup(
    handle: Any, profile: Profile
) -> tuple[Callable[[Any], Any] | None, dict[str, Any], Profile]:
    """(port factory, model config, profile) for the classic machine on ``handle``; the factory
    is None for the reference model in process."""
    if handle.kind == "model":
        return in_process_port_factory(handle), handle.model_config, profile
    from conformance.protocols.classic.oracle import OraclePort

    session = handle.session
    return (lambda coord: OraclePort(coord, session)), handle.model_config, profile


def in_process_port_factory(handle: Any) -> Callable[[Any], Any] | None:
    """For callers that bring their own coordinator (the pytest plugin's ``coordinator``): on a
    ``mutant:NAME`` target the mutant's coordinator and port replace the reference ones."""
    name = handle.variants.get("mutant")
    mutant = get_mutant(name) if name else None
    if mutant is None or mutant.protocol != "classic":
        return None

    def factory(coord: Any) -> Any:
        from model.classic.port import ModelPort

        if mutant.coordinator is not None and not isinstance(coord, mutant.coordinator):
            coord = mutant.coordinator(coord.config, coord.chooser)
        return (mutant.port or ModelPort)(coord)

    return factory

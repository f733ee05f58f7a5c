"""A mutant as a target: ``--target mutant:NAME`` (docs/mutants.md#mutant-targets).

`conformance.targets.open.open_target` hands ``mutant:NAME`` here. The handle is an in-process target
like ``model``: its ``variants`` (``{"mutant": NAME}``) make `conformance.protocols.build` put the mutant's
coordinator, port or client where the reference ones would be, and its ``port_factory`` does the
same for callers that bring their own coordinator (the pytest plugin's ``coordinator`` fixture). The
state machines see a port either way and cannot tell a mutant from any other coordinator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from conformance.errors import UsageError
from conformance.mutants import get_mutant
from conformance.targets.open import MUTANT_PREFIX, TargetHandle


class MutantHandle(TargetHandle):
    """The handle of a mutant target; `port_factory` swaps in the mutant's coordinator and port."""

    def port_factory(self) -> Callable[[Any], Any] | None:
        mutant = get_mutant(self.variants["mutant"])
        if mutant.protocol != "classic":
            return None

        def factory(coord: Any) -> Any:
            from model.classic.port import ModelPort

            if mutant.coordinator is not None and not isinstance(coord, mutant.coordinator):
                coord = mutant.coordinator(coord.config, coord.chooser)
            return (mutant.port or ModelPort)(coord)

        return factory


def mutant_handle(name: str) -> TargetHandle:
    """The target ``mutant:NAME``; a usage error naming the known mutants when there is none."""
    from conformance.formats.trace_file import groupcheck_version

    mutant = get_mutant(name)
    handle = MutantHandle(
        f"{MUTANT_PREFIX}{name}",
        f"groupcheck {groupcheck_version()} with mutant {name}",
        "model",
        model_config={},
        variants={"mutant": name},
    )
    handle.notes.append(f"mutant {name} ({mutant.protocol}): {mutant.fault}")
    if mutant.coordinator is None and mutant.port is None:
        handle.notes.append(f"mutant {name} is client-side: the coordinator is the reference model")
    return handle


def target_variants(handle: TargetHandle, variants: Mapping[str, str]) -> dict[str, str]:
    """``--variant`` values plus the target's own (a different ``mutant=`` is a usage error)."""
    out = dict(variants)
    for key, value in handle.variants.items():
        if key in out and out[key] != value:
            raise UsageError(
                f"--target {handle.name} and --variant {key}={out[key]} disagree; give one of them"
            )
        out[key] = value
    return out


def check_setup(spec: str, variants: Mapping[str, str], protocol: str) -> tuple[dict[str, str], list[str]]:
    """`groupcheck check --target mutant:NAME`: the variants and protocols to run (``all`` means the
    mutant's own protocol), opened through the adapter layer like any target."""
    from conformance.targets.open import open_target

    with open_target(spec) as handle:
        merged = target_variants(handle, variants)
    mutant = get_mutant(merged["mutant"])
    if mutant.protocol == "mixed":  # the mixed machine selects its mutant by ``mixed_mutant``
        merged = {**dict(mutant.variants), **merged}
    if protocol == "all":
        return merged, [mutant.protocol]
    get_mutant(mutant.name, protocol)  # a usage error when the protocols differ
    return merged, [protocol]


def replay_setup(spec: str, variants: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """`groupcheck replay --target mutant:NAME`: replay on the model with the mutant's variant."""
    from conformance.targets.open import open_target

    with open_target(spec) as handle:
        return "model", target_variants(handle, variants)

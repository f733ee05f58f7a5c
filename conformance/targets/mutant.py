"""A mutant as a target: ``--target mutant:NAME`` (docs/mutants.md#mutant-targets).

`conformance.targets.open.open_target` opens ``mutant:NAME`` (`mutant_handle`); this module merges
the target's variants with ``--variant`` for `check` and `replay`. The handle is an in-process target
like ``model``: its ``variants`` (``{"mutant": NAME}``) make the protocol's simulator builder put the
mutant's coordinator, port or client where the reference ones would be, and its kit's
``real_setup`` does the same for callers that bring their own coordinator (the pytest plugin's
``coordinator`` fixture). The state machines see a port either way and cannot tell a mutant from
any other coordinator.
"""

from __future__ import annotations

from collections.abc import Mapping

from conformance.errors import UsageError
from conformance.mutants import get_mutant
from conformance.targets.open import TargetHandle, open_target


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
    mutant's own protocol), opened through the adapter layer like any target. A mutant that a
    variant of its own selects (its variants name it: a mixed mutant's ``mixed_mutant``, since the
    mixed machine does not read ``mutant``) brings its variants along."""
    with open_target(spec) as handle:
        merged = target_variants(handle, variants)
    mutant = get_mutant(merged["mutant"])
    if mutant.name in dict(mutant.variants).values():
        merged = {**dict(mutant.variants), **merged}
    if protocol == "all":
        return merged, [mutant.protocol]
    get_mutant(mutant.name, protocol)  # a usage error when the protocols differ
    return merged, [protocol]


def replay_setup(spec: str, variants: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """`groupcheck replay --target mutant:NAME`: replay on the model with the mutant's variant."""
    with open_target(spec) as handle:
        return "model", target_variants(handle, variants)

"""One mutant's check with its coordinator probed (`conformance.mutants.infection`): the verdict
``groupcheck check --target mutant:NAME`` gives, and whether the run ever infected the model.

    python -m conformance.power.infection --mutant NAME [--protocol P] [--profile ci] [--seed 0]

Prints the check's verdict line as `groupcheck check` does, ``violated: ...`` when caught, and one
``infection: {json}`` line (calls, infected calls, by entry, the first infected call). Exit codes as
`groupcheck check`'s. `conformance.power.heldout_power --infection` runs it per catalogue entry.
"""

from __future__ import annotations

import argparse
import json
import sys

from conformance.errors import ToolError

EXIT_OK, EXIT_VIOLATION, EXIT_TOOL, EXIT_INCONCLUSIVE = 0, 1, 2, 3


def run(mutant: str, protocol: str, profile: str, seed: int) -> tuple[int, list[str]]:
    """The exit code and the printed lines of one probed check."""
    from conformance.engine.profiles import get_profile
    from conformance.engine.run import run_check
    from conformance.mutants import get_mutant
    from conformance.mutants.infection import InfectionLog, probing
    from conformance.protocols import KITS  # noqa: F401 - installs the protocol kits
    from conformance.targets.mutant import check_setup

    spec = f"mutant:{mutant}"
    variants, protocols = check_setup(spec, {}, protocol)
    lines, code = [], EXIT_OK
    for proto in protocols:
        log = InfectionLog()
        with probing(log):
            result = run_check(
                proto, target=spec, profile=get_profile(profile), seed_value=seed, variants=variants
            )
        lines.append(
            f"{proto} on {spec}: {result.verdict} ({result.max_examples} examples, seed {seed}, "
            f"{result.seconds:.1f} s)"
        )
        if result.error:
            raise ToolError(f"{spec}: {result.error}")
        if result.violations:
            lines.append(f"violated: {', '.join(sorted({v.invariant for v in result.violations}))}")
            code = max(code, EXIT_VIOLATION)
        elif result.vacuous:
            code = EXIT_INCONCLUSIVE if code == EXIT_OK else code
        probed = get_mutant(mutant).coordinator is not None
        lines.append("infection: " + json.dumps({"probed": probed, **log.as_dict()}, sort_keys=True))
    return code, lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mutant", required=True)
    p.add_argument("--protocol", default="all")
    p.add_argument("--profile", default="ci")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        code, lines = run(args.mutant, args.protocol, args.profile, args.seed)
    except ToolError as e:
        print(f"infection: error: {e}", file=sys.stderr)
        return EXIT_TOOL
    except Exception as e:  # noqa: BLE001 - an unexpected failure is a tool error, never a finding
        print(f"infection: error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_TOOL
    print("\n".join(lines))
    return code


if __name__ == "__main__":
    sys.exit(main())

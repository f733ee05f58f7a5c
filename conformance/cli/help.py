"""The CLI's help texts: accepted values come from the registries themselves (targets, protocols,
variants, profiles, mutants), so `--help` cannot fall behind the code. `complete` gives every
option of every subcommand a help line; tests/test_cli_help.py keeps it that way."""

from __future__ import annotations

import argparse

EXIT_CODES = """exit codes:
  0  pass: every invariant held (and every 'sometimes' one was seen)
  1  an invariant was violated (a counterexample was written)
  2  tool error: bad usage, a malformed file (named with its line), a target that cannot be run
  3  inconclusive: nothing failed, but some behaviour was never exercised"""

PROTOCOLS = (
    "classic (JoinGroup/SyncGroup), consumer (KIP-848), mixed (KIP-848 groups with classic members), all"
)


def targets_help() -> str:
    from conformance.targets import TARGETS

    return (
        "model (the reference model, in process; default), mutant:NAME (the model with one fault; "
        f"'groupcheck mutants --list'), {', '.join(TARGETS)} (provisioned and started for the run), "
        "served-model:NAME (a coordinator mutant served over the wire), "
        "or host:port (a coordinator you run)"
    )


def profiles_help() -> str:
    from conformance.engine.profiles import PROFILES

    shown = ", ".join(
        f"{p.name} ({p.max_examples} examples x {p.step_count} steps{', wire faults' if p.wire_faults else ''})"
        for p in PROFILES.values()
    )
    return f"{shown}; real targets run fewer examples"


def variants_epilog() -> str:
    from conformance.engine.variants import variant_keys
    from conformance.protocols import KITS

    lines = ["variants (--variant KEY=VALUE, repeatable):"]
    for key in variant_keys(KITS.values()).values():
        values = "NAME (groupcheck mutants --list)" if key.name == "mutant" else " | ".join(key.values)
        readers = [kit.name for kit in KITS.values() if any(v.name == key.name for v in kit.variants)]
        lines.append(f"  {key.name}={values}")
        lines.append(f"      {key.help}" + (f" [{', '.join(readers)}]" if readers else ""))
    return "\n".join(lines)


#: help for options registered without one, by option string (or dest for positionals)
OPTION_HELP = {
    "--target": "coordinator under test: model, mutant:NAME, a target name or host:port",
    "--seed": "seed of the run (integer; same seed and same target behaviour, same trace); default 0",
    "--max-examples": "examples to generate (default: the profile's)",
    "--report-dir": "directory for this run's reports and counterexamples",
    "--level": "which verdict decides the exit code: protocol (invariants) or kafka-compat "
    "(also Apache Kafka's exact choices); default protocol",
    "--members": "virtual members (integer)",
    "--partitions": "partitions of the topic (integer)",
    "--depth": "maximum depth (integer)",
    "--fail-on-unknown": "exit 3 when the solver answers unknown",
    "--list-variants": "list the variants and exit",
    "--master": "Spark master URL (default local[*])",
    "--out": "output directory",
    "--overwrite": "replace an existing output directory",
    "--ownerless-bound-ms": "bound (ms) on how long a partition may stay without an owner",
    "--max-counterexamples": "write at most this many counterexamples (integer)",
    "--runs": "number of seeded model runs (integer)",
    "--report": "write the published table to this file",
    "--profile": "dev, ci, thorough or faults (with wire faults)",
    "--variant": "KEY=VALUE, repeatable (groupcheck check --help lists keys and values)",
    "--format": "text (a step table), mermaid (sequence diagram text), svg or png",
    "--output": "write here instead of to standard output (svg/png: beside the trace)",
    "--protocol": "which protocol",
    "name": "target name: apache-kafka, librdkafka-mock, tansu, kfake, kafka-0.9",
    "id": "the id (see the matching list command)",
    "file": "an NDJSON trace file (trace format v1, docs/traces.md)",
    "path": "a trace lake directory (groupcheck pipeline swarm/import --out)",
    "traces": "NDJSON trace files",
}


def complete(parser: argparse.ArgumentParser) -> None:
    """Fill in a help line for every option and positional that has none, in every subcommand."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action.choices.values():
                if choice.epilog is None:
                    choice.epilog = EXIT_CODES
                complete(choice)
            continue
        if action.help is None or action.help == "":
            keys = [s for s in action.option_strings if s.startswith("--")] or [action.dest]
            action.help = next((OPTION_HELP[k] for k in keys if k in OPTION_HELP), None)
        if action.choices is not None and action.help and "%(choices)" not in action.help:
            if not any(str(c) in action.help for c in action.choices):
                action.help += " (one of: %(choices)s)"


def missing_help(parser: argparse.ArgumentParser, path: str = "groupcheck") -> list[str]:
    """``command --option`` of every option without help (tests keep this empty)."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, choice in action.choices.items():
                out += missing_help(choice, f"{path} {name}")
        elif not action.help and action.dest != "help":
            out.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    return out

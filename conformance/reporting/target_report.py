"""Reports of a run against a real target: the per-run folder and the published conformance page.

`write_target_report` writes the usual `summary.md`, `results.json`, `junit.xml` (conformance/reporting/run_report.py)
plus both verdict levels and the kafka-compat findings. `publish` writes
`reports/conformance/<target>.md`: what was run (versions, seed, profile), every invariant and rule
with its verdict at both levels, and each divergence with the steps that replay it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.reporting.rules import rule_rows
from conformance.reporting.run_report import reported_families, write_check_report
from conformance.specs import SPECS_DIR, load_invariants


def levels(result: Any) -> dict[str, str]:
    proto = "FAILED" if result.violations else ("INCONCLUSIVE" if result.vacuous else "PASSED")
    compat = "FAILED" if (result.violations or result.compat) else proto
    return {"protocol": proto, "kafka-compat": compat}


def settings_lines(handle: Any) -> list[str]:
    """The settings the oracle used, each with its origin (started-with / asked / given / Kafka default)."""
    learned = getattr(handle, "settings", None)
    if learned is None:
        return []
    return ["Settings the oracle used (origin):", ""] + [f"- `{line}`" for line in learned.lines()] + [""]


def write_target_report(run: Any, directory: Path, counterexample: Any = None) -> Path:
    result = run.result
    out = write_check_report(result, directory, counterexample)
    data = json.loads((out / "results.json").read_text())
    data["target_version"] = result.target_version
    data["levels"] = levels(result)
    data["level"] = result.level
    data["rules"] = rule_rows(result)
    data["compat"] = [f.__dict__ for f in result.compat]
    (out / "results.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    lines = (out / "summary.md").read_text().splitlines()
    extra = [""] + settings_lines(run.handle)
    extra += ["## Levels", ""] + [f"- {k}: **{v}**" for k, v in levels(result).items()]
    extra += ["", "| rule | protocol | kafka-compat |", "|---|---|---|"]
    extra += [f"| {r['rule']} | {r['protocol']} | {r['kafka-compat']} |" for r in rule_rows(result)]
    (out / "summary.md").write_text("\n".join(lines + extra) + "\n")
    return out


PUBLISHED = Path("reports") / "conformance"


def published_dir(target: str) -> Path:
    """reports/conformance/<target>/: the published page's traces."""
    return PUBLISHED / target.replace(":", "_").replace("/", "_")


def publish(
    runs: list[Any], args: Any, command: str | None = None, divergences: list[Any] | None = None
) -> Path:
    """reports/conformance/<target>.md (and its counterexample traces) from the runs of one target;
    ``divergences`` (`conformance.reporting.divergences.Shown`) from a keep-going run."""
    first = runs[0].result
    safe = first.target.replace(":", "_").replace("/", "_")
    path = PUBLISHED / f"{safe}.md"
    command = command or (
        f"groupcheck check --target {first.target} --protocol {args.protocol} --profile {args.profile} "
        f"--seed {args.seed}" + (f" --max-examples {args.max_examples}" if args.max_examples else "")
    )
    traces = []
    for run in runs if divergences is None else []:  # a keep-going run wrote one trace per divergence
        trace = getattr(run.result, "trace", None)
        if trace is not None:
            from conformance.formats.trace_file import counterexample_path, write_trace

            traces.append(write_trace(trace, counterexample_path(trace, PUBLISHED / safe)))
    write_published(runs, path, command, traces, args, divergences)
    return path


def write_published(
    runs: list[Any],
    path: Path,
    command: str,
    traces: list[Path],
    args_for_page: Any = None,
    divergences: list[Any] | None = None,
) -> None:
    specs = load_invariants()
    first = runs[0].result
    handle = runs[0].handle
    lines = [
        f"# Conformance of {first.target} ({first.target_version})",
        "",
        f"Command: `{command}` (wall time {sum(run.wall_s for run in runs):.0f} s, the target's start included).",
        "",
    ]
    caps = getattr(handle, "capabilities", None)
    if caps is not None:
        lines += [f"Capabilities (ApiVersions): {caps.summary()}.", ""]
    lines += settings_lines(handle)
    notes = [n for n in getattr(handle, "notes", []) if not n.startswith("run id")]
    if notes:
        lines += ["Notes from the adapter:", ""] + [f"- {n}" for n in notes] + [""]
    expected = _expected().get(first.target)
    if expected:
        lines += [f"What the suite finds here (specs/targets.yaml): {expected.get('why', '')}", ""]
    not_run = getattr(args_for_page, "not_run", []) if args_for_page is not None else []
    if not_run:
        lines += ["Protocols not run:", ""] + [f"- {p}: {why}" for p, why in not_run] + [""]
    if traces:
        lines += ["Counterexample traces (NDJSON, `groupcheck show FILE`):", ""]
        lines += [f"- `{t}`" for t in traces] + [""]
    for run in runs:
        r = run.result
        lv = levels(r)
        lines += [
            f"## {r.protocol}: protocol **{lv['protocol']}**, kafka-compat **{lv['kafka-compat']}**",
            "",
            f"Seed {r.seed}, {r.max_examples} examples x profile steps, {r.seconds:.1f} s, variants {r.variants or 'none'}.",
            "",
        ]
        if getattr(run, "faults", None) is not None:
            lines += [f"Injected in this run: {run.faults.removeprefix('faults: ')}.", ""]
        sub = (expected or {}).get(r.protocol)
        if isinstance(sub, dict) and sub.get("why"):  # the protocol's own entry (consumer:, mixed:)
            lines += [f"What the suite finds here ({r.protocol}, specs/targets.yaml): {sub['why']}", ""]
        lines += [
            "| invariant | kind | protocol | kafka-compat |",
            "|---|---|---|---|",
        ]
        failed = {v.invariant for v in r.violations}
        for inv_id, spec in sorted(specs.items()):
            if spec.protocol not in reported_families(r.protocol):
                continue
            if spec.kind == "sometimes":
                v = "SEEN" if r.sometimes.get(inv_id) else "NEVER SEEN"
                lines.append(f"| `{inv_id}` | {spec.kind} | {v} | {v} |")
            else:
                v = "FAILED" if inv_id in failed else "PASSED"
                lines.append(f"| `{inv_id}` | {spec.kind} | {v} | {v} |")
        lines += ["", "| rule | protocol | kafka-compat |", "|---|---|---|"]
        lines += [f"| {x['rule']} | {x['protocol']} | {x['kafka-compat']} |" for x in rule_rows(r)]
        if divergences is not None:
            from conformance.reporting.divergences import section

            mine = [d for d in divergences if d.protocol == r.protocol]
            lines += ["", *section(mine, f"Every distinct divergence ({r.protocol}, keep-going)")]
        elif r.violations:
            lines += ["", "### Divergences and violations", ""]
            lines += [f"- `{v.invariant}` (step {v.step}): {v.message}" for v in r.violations]
            lines += ["", "Steps (replay with the command above and the same seed):", "", "```"]
            lines += [f"{i:3d}. {s}" for i, s in enumerate(r.steps, 1)]
            lines += ["```"]
        if r.compat:
            seen: dict[str, int] = {}
            for f in r.compat:
                key = f"`{f.rule}`: {f.message.split(': ', 1)[-1]}"
                seen[key] = seen.get(key, 0) + 1
            lines += ["", "### kafka-compat findings", ""]
            lines += [f"- {k} (x{n})" for k, n in seen.items()]
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def _expected() -> dict[str, Any]:
    import yaml

    path = SPECS_DIR / "targets.yaml"
    try:
        data = yaml.safe_load(path.read_text())
    except OSError:
        return {}
    return data if isinstance(data, dict) else {}

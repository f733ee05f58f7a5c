"""`groupcheck pipeline coordlog`: run real groups (or take a running broker), export, decode, audit, report.

Writes `<out>/records.parquet` (every decoded record: offset, timestamp, type, key and value as
JSON), `<out>/quarantine.parquet` (records that do not decode, with the reason), `<out>/results.json`
and `<out>/summary.md` with the verdict per invariant. Exit 0 passed, 1 a violation, 2 target or
usage error, 3 inconclusive (nothing could be checked, or records were quarantined).
"""

from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path
from typing import Any

from conformance.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_VIOLATION, TargetError


def _jsonable(v: Any) -> Any:
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    return v


def run_coordlog(args: argparse.Namespace) -> int:
    from conformance.pipeline.coordrun import GROUPS, run_workload

    notes: list[str] = []
    target_desc = args.bootstrap
    if args.start:
        from conformance.targets import TargetError as LaunchError
        from conformance.targets import get_target

        try:
            target = get_target(args.start, topics={args.topic: 6})
            if not target.is_provisioned():
                target.provision()
            bootstrap = target.start()
        except LaunchError as exc:
            raise TargetError(f"{args.start}: {exc}") from exc
        target_desc = f"{args.start} {target.version()} at {bootstrap}"
        try:
            notes = run_workload(bootstrap, args.topic, args.pace)
            result = _export_and_audit(bootstrap, args, args.group or list(GROUPS))
        finally:
            target.stop()
    else:
        from conformance.pipeline.coordrun import probe

        probe(args.bootstrap)  # a closed, hanging or garbage peer: exit 2 in seconds
        result = _export_and_audit(args.bootstrap, args, args.group)
    records, quarantined, audit, topics = result
    write_coord_report(args.out, target_desc, notes, records, quarantined, audit, topics)
    print(f"coordinator log of {target_desc}: {audit.verdict} ({audit.records} records, "
          f"{sum(audit.states_checked.values())} states checked, {len(quarantined)} quarantined)")  # fmt: skip
    for inv, n in sorted(audit.checks.items()):
        bad = sum(1 for v in audit.violations if v[2] == inv)
        print(f"  {inv}: {'FAILED' if bad else 'PASSED'} ({n} states{f', {bad} violations' if bad else ''})")
    for gid, offset, inv, msg in audit.violations[:10]:
        print(f"  offset {offset} {gid}: {inv}: {msg}")
    print(f"report: {args.out / 'summary.md'}")
    if audit.verdict == "FAILED":
        return EXIT_VIOLATION
    return EXIT_INCONCLUSIVE if audit.verdict == "INCONCLUSIVE" or quarantined else EXIT_OK


def _export_and_audit(bootstrap: str, args: argparse.Namespace, groups: list[str] | None) -> tuple[Any, ...]:
    from confluent_kafka import KafkaException

    from conformance.pipeline.coordaudit import audit_records
    from conformance.pipeline.coordrun import read_log, topic_metadata

    records, quarantined = [], []
    try:
        for item in read_log(bootstrap):
            (quarantined if isinstance(item, tuple) else records).append(item)
    except KafkaException as exc:  # the client library gave up (timeouts are its own)
        raise TargetError(f"{bootstrap}: reading the coordinator log failed: {exc}") from None
    topics = sorted({str(r.key["topic"]) for r in records if r.name == "OffsetCommit"} | {args.topic})
    try:
        names, counts = topic_metadata(bootstrap, topics)
    except TargetError:
        names, counts = topic_metadata(bootstrap, [t for t in topics if t != args.topic])
    audit = audit_records(records, names, counts, groups)
    audit.quarantined.extend(quarantined)
    return records, audit.quarantined, audit, counts


def write_coord_report(
    out: Path,
    target: str,
    notes: list[str],
    records: list[Any],
    quarantined: list[Any],
    audit: Any,
    topics: Any,
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "offset": pa.array([r.offset for r in records], pa.int64()),
                "timestamp": pa.array([r.timestamp for r in records], pa.int64()),
                "record_type": pa.array([r.record_type for r in records], pa.int16()),
                "name": [r.name for r in records],
                "key": [json.dumps(_jsonable(r.key), sort_keys=True) for r in records],
                "value": [
                    None if r.value is None else json.dumps(_jsonable(r.value), sort_keys=True)
                    for r in records
                ],
            }
        ),
        out / "records.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "offset": pa.array([q[0] for q in quarantined], pa.int64()),
                "reason": [q[1] for q in quarantined],
            }
        ),
        out / "quarantine.parquet",
    )
    per_inv = {
        inv: {"states": n, "violations": sum(1 for v in audit.violations if v[2] == inv)}
        for inv, n in sorted(audit.checks.items())
    }
    results = {
        "target": target,
        "verdict": audit.verdict,
        "records": audit.records,
        "records_by_type": dict(sorted(audit.by_type.items())),
        "states_checked": dict(sorted(audit.states_checked.items())),
        "invariants": per_inv,
        "violations": [list(v) for v in audit.violations],
        "quarantined": len(quarantined),
        "not_applicable": list(audit.not_applicable),
        "workload": notes,
    }
    (out / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    lines = [
        f"# Coordinator-log audit: {audit.verdict}",
        "",
        f"Target: {target}. Records read from `__consumer_offsets`: {audit.records} "
        f"({', '.join(f'{k} {v}' for k, v in sorted(audit.by_type.items()))}); {len(quarantined)} quarantined.",
        "",
    ]
    if notes:
        lines += ["Workload (confluent-kafka consumers):", ""] + [f"1. {n}" for n in notes] + [""]
    lines += ["| group | states checked |", "|---|---|"]
    lines += [f"| `{g}` | {n} |" for g, n in sorted(audit.states_checked.items())]
    lines += ["", "| invariant | states checked | verdict |", "|---|---|---|"]
    for inv, d in per_inv.items():
        lines.append(
            f"| `{inv}` | {d['states']} | {'FAILED (' + str(d['violations']) + ')' if d['violations'] else 'PASSED'} |"
        )
    if audit.violations:
        lines += ["", "Violations (first 20):", ""]
        lines += [f"- offset {o} `{g}`: `{i}`: {m}" for g, o, i, m in audit.violations[:20]]
    lines += [
        "",
        "Not applicable to a log (they need timers, responses or the clients' view): "
        + ", ".join(f"`{i}`" for i in audit.not_applicable) + ".",
    ]  # fmt: skip
    (out / "summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")

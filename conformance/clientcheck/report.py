"""A Markdown verdict table over saved client runs, each log judged again (reports/clients/<client>.md).

`groupcheck check --client C --replay DIR` with a folder: every ``*/log.ndjson`` under it (at most
`MAX_RUNS`) is judged again with the current invariants, and each run's ``result.json`` adds what
the live run alone knows (forced actions, why it was inconclusive).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.clientcheck.invariants import judge

MAX_RUNS = 200


def table(root: Path, load_log: Any) -> tuple[str, bool]:
    """(Markdown table, whether any run failed)."""
    rows = [
        "| run | protocol | assignor | seed | verdict | checks | findings |",
        "|---|---|---|---|---|---|---|",
    ]
    failed = False
    for log_path in sorted(root.glob("*/log.ndjson"))[:MAX_RUNS]:
        header, log = load_log(log_path)
        config = header["config"]
        judgement = judge(log, config["topics"])
        notes: list[str] = []
        result = log_path.parent / "result.json"
        if result.exists():
            notes = list(json.loads(result.read_text()).get("notes", []))[:5]
        verdict = "**FAILED**" if judgement.findings else ("INCONCLUSIVE" if notes else "PASSED")
        failed |= bool(judgement.findings)
        ordered = sorted(judgement.findings, key=lambda f: (f["invariant"], f["seq"]))
        found = list(dict.fromkeys(f"`{f['invariant']}` (entry {f['seq']})" for f in ordered))
        found += [f"inconclusive: {n}" for n in notes]
        assignor = config.get("assignor", "") if config.get("protocol") == "classic" else "server-side"
        rows.append(
            f"| `{log_path.parent.name}` | {config.get('protocol')} | {assignor} | {config.get('seed')} | {verdict} "
            f"| {sum(judgement.exercised.values())} | {'; '.join(found) or '-'} |"
        )
    return "\n".join(rows) + "\n", failed

"""Render the held-out bug catalogue (docs/bug-catalogue-heldout.md) from specs/bugs-heldout.yaml and
the suite-power report (reports/suite-power.md) from the JSON lines of `heldout_power`.

    python -m conformance.power.heldout_report --catalogue docs/bug-catalogue-heldout.md
    python -m conformance.power.heldout_report --power reports/heldout/before.jsonl \
        --report reports/suite-power.md --machine "<nproc, python --version, commit>"
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from conformance.power.heldout_power import SPEC, load_bugs

MAX_ROWS = 1000

CATALOGUE_HEAD = """# Second bug catalogue: bugs the suite was not built for

Generated from `specs/bugs-heldout.yaml` by `python -m conformance.power.heldout_report
--catalogue docs/bug-catalogue-heldout.md`; the descriptions are our own words, the sources are
the public issues and pull requests that record each bug.

The first catalogue (21 rows, 43 mutants under `conformance/mutants/`) shaped the suite's
invariants. This one measures the suite on bugs it was *not* built for: every entry is a real bug
of Apache Kafka's group coordinator or consumer, of a Kafka-compatible broker, or of a client
library, absent from the first catalogue and from the first mutants. Each has a mutant of the model
(`conformance/mutants/heldout_classic.py`, `heldout_consumer.py`, `heldout_mixed.py`; wave 2 in
`heldout2_classic.py`, `heldout2_consumer.py`, `heldout2_clients.py`, `heldout2_others.py`; wave 3
in `heldout3_classic.py`, `heldout3_consumer.py`, `heldout3_others.py`) run
with `groupcheck check --target mutant:<mutant> --protocol <protocol>`; tests/test_heldout_mutants.py,
tests/test_heldout_mutants_848.py, tests/test_heldout2_*.py and tests/test_heldout3_*.py show each mutant changes the model's
answers, requests or records.

## Split (fixed before any measurement)

The ids are sorted, shuffled with `random.Random(20261126).shuffle(ids)` (Python's Mersenne
Twister), the first `len(ids) // 2` become the **dev** half (allowed to guide new invariants) and
the rest the **held-out** half (never looked at while writing invariants; measured only before and
after). The YAML records the result in each entry's `half`; a test recomputes it.

The catalogue grows in *waves*. Wave 1 is HB-01 to HB-24. Wave 2 (HB-25 on) was gathered later,
when every wave-1 entry had been read while its mutant was built, so wave 1's held-out half no
longer measures bugs nobody working on the invariants has seen. A wave is split among its own
entries with its own seed (wave 2: `random.Random(20261129)`), so it never moves an earlier entry
between the halves; its entries and mutants were written without running the suite against them.
Wave 3 (HB-45 on, `random.Random(20261130)`) was gathered once wave 2's held-out half had been read
and the stray-request draws written, from the bugs' sources alone; its mutants too were built without
running the suite against them.

"""

NOT_BUILT = """## Real bugs found but not built as mutants

These are real and expressible against the model's requests, but the model itself has the faulty
behaviour (it predates the fix), so a mutant would be the model unchanged:

* KAFKA-20601 / apache/kafka PR #22356: a static member rejoining a full consumer group is refused
  by the `group.consumer.max.size` check before the coordinator notices it replaces its own slot
  (`ConsumerCoordinator.check_group_capacity` ignores the instance id).
* KAFKA-20434 / apache/kafka PR #22036: static members rejoining with a different server assignor
  do not bump the group epoch (`group_epoch_bump_due` looks at names and regex only).
* KAFKA-20640 / apache/kafka PR #22457: with `group.consumer.migration.policy=disabled` a new classic
  member is still admitted into a consumer group (`MixedConsumerCoordinator.classic_join` has no
  policy check).
* KAFKA-18687 / apache/kafka PR #19790: the online upgrade does not set the subscription metadata;
  the model's conversion writes none either, but it also never refreshes it on the next heartbeat,
  so Kafka's consequence (an extra epoch bump) does not follow.
* KAFKA-20272 / apache/kafka PR #21662: classic members of a mixed group are told to rejoin when the
  group epoch moves rather than when a new target exists; both rules are model variants
  (`MixedConfig.classic_rejoin_epoch`), the default being the pre-fix one.

Found while gathering wave 2, with the model on the faulty side as well:

* KAFKA-19720: a classic static member that replaces a consumer member of a mixed group keeps the
  regex subscription of the member it replaces.
* KAFKA-20641: a static member that leaves with member epoch -2 while it is revoking stays in
  UNREVOKED_PARTITIONS.
* KAFKA-14201 / apache/kafka PR #12598: an OffsetCommit with generation -1 and a group instance id
  to an Empty classic group is stored by Kafka 3.3 on; the model answers UNKNOWN_MEMBER_ID.
* KAFKA-20938 / apache/kafka PR #23174: a second JoinGroup of a member whose first JoinGroup is
  still parked replaces it, and the first is never answered; the fix answers it NOT_COORDINATOR.
"""


def render_catalogue(bugs: list[dict[str, Any]]) -> str:
    lines = [CATALOGUE_HEAD, "## Entries", ""]
    lines.append("| id | wave | half | protocol | layer | mutant | title |")
    lines.append("|---|---|---|---|---|---|---|")
    for b in bugs:
        lines.append(
            f"| {b['id']} | {b['wave']} | {b['half']} | {b['protocol']} | {b['layer']} | `{b['mutant']}` "
            f"| {b['title']} |"
        )
    for b in bugs:
        lines += ["", f"### {b['id']}: {b['title']}", ""]
        refs = "; ".join(f"[{s['ref']}]({s['url']})" for s in b["sources"])
        lines += [f"Sources: {refs}", ""]
        lines += [
            f"Protocol `{b['protocol']}`, layer {b['layer']}, mutant `{b['mutant']}`, wave {b['wave']}, "
            f"half {b['half']}.",
            "",
        ]
        lines += [f"**Faulty.** {b['faulty']}", "", f"**Fixed.** {b['fixed']}"]
    lines += ["", NOT_BUILT]
    return "\n".join(lines)


def load_rows(path: Path) -> dict[str, dict[str, Any]]:
    """The last row of each mutant in a `heldout_power` JSON lines file (bounded)."""
    rows: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if n > MAX_ROWS:
            raise ValueError(f"{path}: more than {MAX_ROWS} rows")
        if line.strip():
            row = json.loads(line)
            rows[row["mutant"]] = row
    return rows


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


POWER_HEAD = """# Suite power on bugs it was not built for

The suite's invariants were written against the first bug catalogue and its 43 mutants. This
report measures them on a second catalogue of 24 real bugs (docs/bug-catalogue-heldout.md,
specs/bugs-heldout.yaml), split by a fixed seed into a dev half and a held-out half before any run.

For every entry, one `groupcheck check` run of the `ci` profile (150 examples of up to 40 steps)
at seed 0 against its mutant, bounded by a 300 s wall-clock timeout, one after the other:

    groupcheck check --target mutant:<mutant> --protocol <protocol> --profile ci --seed 0

driven by `python -m conformance.power.heldout_power --out reports/heldout/before.jsonl`
(rows in reports/heldout/before.jsonl) and rendered by `python -m conformance.power.heldout_report
--power reports/heldout/before.jsonl --report reports/suite-power.md --machine ...`.

*Caught* means exit code 1 with a named invariant; PASSED (exit 0) and INCONCLUSIVE (exit 3, some
`sometimes_*` coverage goal unmet in that run) are both *not caught*. "run s" is the check's own
clock up to its verdict (for a caught mutant: the time to catch, shrinking included); "wall s"
includes start-up. Both are inflated by other work on the shared machine (see its load below).

"""


def render_power(
    bugs: list[dict[str, Any]], rows: dict[str, dict[str, Any]], machine: str, title: str
) -> str:
    lines = [POWER_HEAD, f"## {title}", ""]
    for half in ("heldout", "dev"):
        chosen = [b for b in bugs if b["half"] == half]
        done = [rows[b["mutant"]] for b in chosen if b["mutant"] in rows]
        caught = sum(1 for r in done if r["caught"])
        lines += [f"### {half} half: caught {caught} of {len(done)} run ({len(chosen)} entries)", ""]
        lines.append("| id | mutant | protocol | layer | verdict | caught | invariant(s) | run s | wall s |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for b in chosen:
            r = rows.get(b["mutant"])
            if r is None:
                lines.append(
                    f"| {b['id']} | `{b['mutant']}` | {b['protocol']} | {b['layer']} | not run | - | - | - | - |"
                )
                continue
            inv = ", ".join(f"`{i}`" for i in r["invariants"]) or "-"
            lines.append(
                f"| {b['id']} | `{b['mutant']}` | {b['protocol']} | {b['layer']} | {r['verdict']} | "
                f"{'yes' if r['caught'] else 'no'} | {inv} | {_fmt(r['check_seconds'])} | {_fmt(r['wall_seconds'])} |"
            )
        lines.append("")
    lines += [f"Machine: {machine}", ""]
    return "\n".join(lines)


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "not run"
    seen = row.get("infection")
    infected = ""
    if seen and seen["probed"]:
        shown = f"{seen['infected']:,} ({seen.get('in_answers', 0):,} in answers)"
        infected = f", infected {shown} of {seen['calls']:,} calls"
        if "diverged" in seen:
            infected += f", answers diverged in {seen['diverged']:,} of {seen['examples']:,} examples"
    if row["caught"]:
        return f"**caught** {_fmt(row['check_seconds'])} s{infected}"
    return f"{row['verdict']}{infected}"


def why_missed(rows: list[dict[str, Any] | None]) -> str:
    """Why an entry was missed at every seed, from its probed rows (docs/mutants.md#infection)."""
    done = [r for r in rows if r is not None]
    if any(r["caught"] for r in done):
        return "caught"
    seen = [r.get("infection") for r in done]
    if not done or any(s is None for s in seen):
        return "-"
    if not any(s["probed"] for s in seen):
        return "client fault, not probed"
    if any(s.get("in_answers") or s.get("diverged") for s in seen):
        return "answers changed, not judged"
    return "records changed, no answer" if any(s["infected"] for s in seen) else "never infected"


def render_seeds(bugs: list[dict[str, Any]], by_seed: dict[int, dict[str, dict[str, Any]]]) -> str:
    """One table per half: each entry's verdict at every seed (time to catch where caught), the
    invariants that caught it, and how many entries were caught at one seed or more."""
    seeds = sorted(by_seed)
    lines: list[str] = []
    for half in ("heldout", "dev"):
        chosen = [b for b in bugs if b["half"] == half]
        rows = {b["mutant"]: [by_seed[s].get(b["mutant"]) for s in seeds] for b in chosen}
        ever = sum(1 for b in chosen if any(r and r["caught"] for r in rows[b["mutant"]]))
        lines += [f"### {half} half: caught at one seed or more: {ever} of {len(chosen)}", ""]
        probed = any(r and "infection" in r for b in chosen for r in rows[b["mutant"]])
        lines.append(
            "| id | mutant | protocol | "
            + " | ".join(f"seed {s}" for s in seeds)
            + " | invariant(s) |"
            + (" why missed |" if probed else "")
        )
        lines.append("|---|---|---|" + "---|" * len(seeds) + "---|" + ("---|" if probed else ""))
        for b in chosen:
            found = sorted({i for r in rows[b["mutant"]] if r and r["caught"] for i in r["invariants"]})
            cells = " | ".join(_cell(r) for r in rows[b["mutant"]])
            invs = ", ".join(f"`{i}`" for i in found) or "-"
            why = f" {why_missed(rows[b['mutant']])} |" if probed else ""
            lines.append(f"| {b['id']} | `{b['mutant']}` | {b['protocol']} | {cells} | {invs} |{why}")
        per_seed = [
            sum(1 for b in chosen if (r := by_seed[s].get(b["mutant"])) is not None and r["caught"])
            for s in seeds
        ]
        lines += [
            "",
            "Caught per seed: "
            + ", ".join(f"seed {s}: {n} of {len(chosen)}" for s, n in zip(seeds, per_seed, strict=True)),
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--catalogue", type=Path, help="write the catalogue document here")
    p.add_argument("--power", type=Path, help="JSON lines written by heldout_power")
    p.add_argument("--report", type=Path, help="print the power tables into this file's BEFORE section")
    p.add_argument("--machine", default="")
    p.add_argument("--title", default="Before: the suite as it was")
    p.add_argument("--wave", type=int, help="power tables of this wave's entries only")
    p.add_argument(
        "--seed-rows",
        action="append",
        default=[],
        metavar="SEED=FILE",
        help="print one table of verdicts per seed (rows of heldout_power run at SEED; repeatable)",
    )
    args = p.parse_args(argv)
    bugs = load_bugs(SPEC)
    if args.catalogue:
        args.catalogue.parent.mkdir(parents=True, exist_ok=True)
        args.catalogue.write_text(render_catalogue(bugs) + "\n")
    chosen = [b for b in bugs if args.wave is None or b["wave"] == args.wave]
    if args.seed_rows:
        by_seed = {}
        for item in args.seed_rows:
            seed, sep, path = item.partition("=")
            if not sep or not seed.isdigit():
                raise SystemExit(f"--seed-rows {item!r}: expected SEED=FILE")
            by_seed[int(seed)] = load_rows(Path(path))
        print(render_seeds(chosen, by_seed))
    if args.power:
        text = render_power(chosen, load_rows(args.power), args.machine, args.title)
        if args.report:
            args.report.write_text(text)
        else:
            print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

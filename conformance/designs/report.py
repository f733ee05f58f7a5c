"""reports/design-review.md: the designs x properties table, the figures and a paragraph per design.

Every claim in a paragraph is filled in from this run (a trace, a number) or says the property held;
the fixed text says what the seed proposed and where, in this project's own words.
"""

from __future__ import annotations

from pathlib import Path

from conformance.designs.compare import PROPERTIES, Comparison, Row

INTRO = {
    "shipped": "The two-phase protocol Kafka shipped (seed 000 'Protocol', Phase 1 and Phase 2): one leader assigns from its own metadata and the coordinator hands each member its share in SyncGroup.",
    "independent-hash": "Seed 000's first proposal ('Consumer Embedded Protocol', 'Subscriptions' and 'Metadata'): JoinGroup gives every member every subscription, each member computes the whole assignment and keeps its share; a metadata hash (over its subscription's topics, or all topics for a regex) is meant to catch members that see different metadata, who then refetch and rejoin.",
    "consistent-hash": "The alternative seed 000 mentions under 'Metadata': map each partition to one member by consistent hashing, so metadata need not agree; the seed names the price, worse balance.",
    "hashed-subgroups": "Seed 000 'Scaling Groups: Dropping Topic Lists': members send only a subscription hash and a metadata hash; the largest group of equal subscriptions assigns, the others idle until the next rebalance; the seed notes the need for a tie-breaker and the halved capacity during an upgrade.",
    "compressed": "Seed 000 'Scaling Groups: Compression': compress the member metadata, or the whole member list, in the join-all protocol. Modelled as sizes only (zlib over the member list every JoinGroup answer carries).",
    "sync-in-join": "Seed 000 'Single Client Assignor': JoinGroup gets phases (join, synchronize, joined); the coordinator picks one synchronizer (random, last to join, newest member or largest metadata version), which assigns for everyone; a synchronization timeout covers a synchronizer that dies, and an error from one that cannot read some metadata goes to every member.",
    "broker-coordinator": "Seed 001, the earlier broker-side design: consumers register with a coordinator elected through ZooKeeper, which pings them every third of their session timeout, computes ownership with its own strategy and pushes it with StopFetcher/StartFetcher (or by closing sockets and answering re-registrations); consumers that hear nothing for a session timeout stop and look for the coordinator again.",
    "kip341-local-marker": "KIP-341's rejected alternative (seed 002): the sticky assignor numbers its own assignments instead of using the group generation.",
    "kip1082-server-id": "KIP-1082's rejected alternative 2 (seed 004): the coordinator generates the member id on the first heartbeat without adding the member; the client joins again at once with it.",
    "shipped-kip848": "The KIP-848 protocol as shipped, with KIP-1082's client-generated member ids: the baseline for seed 004's alternative.",
}
NOTES = {
    "independent-hash": "Read literally, a member can only compare its hash with members of the same subscription, so a lagging broker for a topic outside the compared set goes unnoticed; `scope=cluster` (every member hashes every topic) notices it, and then rebalances for as long as the broker lags and whenever any topic of the cluster changes.",
    "sync-in-join": "Its message count is linear like the shipped protocol's; each Joined answer lists every member id, so bytes still grow with the square of the group, more slowly. The synchronizer changes from round to round, so the metadata of whichever member is chosen decides the assignment; the shipped protocol keeps one leader and puts the rebalance timeout (KIP-62, JoinGroup v1) in the member's hands, the per-request synchronization timeout the seed suggests.",
    "broker-coordinator": "Ownership is pushed without a generation, and safety rests on timing: the coordinator must not hand a partition on before the old owner has stopped on its own silence check. Raising `max_ping_retries` closes the window this run found and slows failure detection (see the liveness table).",
    "kip341-local-marker": "It does fix KAFKA-7026's double assignment (scenario `kafka-7026-local-marker` passes): it was rejected for what the marker is, a second, resettable generation.",
    "kip1082-server-id": "It removes ghost members as KIP-1082's shipped design does (scenario `server-id-lost-first-response` passes on both), at one more round trip per join.",
}
VARIANT_NOTES = {
    "broker-coordinator:failover=zombie": "The coordinator's ZooKeeper session expires while its broker runs on (seed 001 section 10: only a reconnecting ZooKeeper client learns of the expiry and calls handleNewSession). Until then it pings its consumers, so they never look for the new coordinator, which hands the same partitions to whoever registers with it.",
    "broker-coordinator:threads=2": "Ownership computed over two fetcher threads per consumer (seed 001 section 9 step 1.2, StartFetcher's ownership_info per consumer_thread_id). The granularity changes who idles and StartFetcher's size, not the lost-socket hazard (scenario `broker-socket-lost` fails with threads=2 too).",
}
DECIDES = {
    "independent-hash": ("design.single_owner", "design.eventually_owned", "cost"),
    "consistent-hash": ("design.eventually_owned", "balance", "cost"),
    "hashed-subgroups": ("design.eventually_owned", "design.single_owner", "cost"),
    "compressed": ("cost",),
    "sync-in-join": ("design.members_survive", "design.eventually_owned"),
    "broker-coordinator": ("design.upgrade_completes", "design.single_owner", "liveness"),
    "kip341-local-marker": ("design.generation_monotonic",),
    "kip1082-server-id": ("design.leave_accepted", "join-cost"),
}


def _link(path: Path | None, base: Path) -> str:
    if path is None:
        return ""
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)


def _cell(row: Row, inv: str, base: Path) -> str:
    c = row.cells.get(inv)
    if c is None:
        return ""
    if c.status == "violated":
        return f"**violated** ([trace]({_link(c.trace, base)}))"
    return "n/a" if c.status == "n/a" else "held"


def _cost_at(comp: Comparison, design: str, members: int) -> tuple[int, int] | None:
    for c in comp.costs.get(design, []):
        if c.members == members:
            return c.messages, c.bytes
    return None


def _join_at(comp: Comparison, design: str, members: int) -> tuple[int, int, int] | None:
    for c in comp.join_costs.get(design, []):
        if c.members == members:
            return c.messages, c.bytes, c.round_trips
    return None


def _secs(ms: int | None) -> str:
    return "not within 60 s" if ms is None else f"{ms / 1000:.1f} s"


def _evidence(row: Row, inv: str, base: Path) -> str:
    c = row.cells[inv]
    if c.status != "violated":
        return f"`{inv}` {c.status}" + (f" ({c.note})" if c.note else "")
    where = "the search" if c.origin == "search" else f"scenario `{c.origin}`"
    return (
        f"`{inv}` violated: from {where}, shrunk to {c.ops} ops ([trace]({_link(c.trace, base)})), "
        f'at t={c.at} ms: "{c.message}"; it replays {c.replay_design} on this design and '
        f"{c.replay_baseline} on `{row.baseline}`"
    )


def _paragraph(row: Row, comp: Comparison, base: Path, rows: dict[str, Row]) -> list[str]:
    out = [f"### {row.label}", "", INTRO.get(row.design, "")]
    reasons, held = [], []
    for what in DECIDES.get(row.design, ()):
        if what.startswith("design."):
            if row.cells[what].status == "violated":
                reasons.append(_evidence(row, what, base))
            else:
                held.append(f"`{what}` ({row.cells[what].status})")
        elif what == "cost":
            mine, ship = _cost_at(comp, row.design, 500), _cost_at(comp, "shipped", 500)
            if mine and ship:
                reasons.append(
                    f"one rebalance of 500 members costs {mine[1]:,} bytes in {mine[0]:,} messages (shipped: {ship[1]:,} bytes in {ship[0]:,})"
                )
        elif what == "join-cost":
            mine, ship = _join_at(comp, row.design, 500), _join_at(comp, "shipped-kip848", 500)
            if mine and ship:
                reasons.append(
                    f"a member joining a group of 499 needs {mine[2]} round trips, {mine[0]} messages and {mine[1]:,} bytes before the coordinator adds it (shipped-kip848: {ship[2]}, {ship[0]}, {ship[1]:,})"
                )
        elif what == "balance" and row.balance is not None:
            reasons.append(
                f"with 5 members and 20 partitions the busiest member holds {row.balance}x its even share"
            )
        elif what == "liveness" and row.measures:
            ship = rows.get("shipped")
            theirs = (
                f" (shipped: {_secs(ship.measures['crash'].converged_ms)})" if ship and ship.measures else ""
            )
            reasons.append(
                f"after a consumer crash the group converges in {_secs(row.measures['crash'].converged_ms)}{theirs}, every rebalance stops every fetcher first"
            )
    if reasons:
        out += ["", "What decided against it, from this run:", ""] + [f"* {r}" for r in reasons]
    elif row.design in ("shipped", "shipped-kip848"):
        kept = [inv for inv, _ in PROPERTIES if row.cells[inv].status == "held"]
        out += [
            "",
            f"Baseline: held {len(kept)} of {len(PROPERTIES)} properties in {row.workloads} workloads and {len(row.scenarios)} scenario runs.",
        ]
    if held:
        out += ["", "Held in this run: " + ", ".join(held) + "."]
    if row.design in NOTES and not row.options:
        out += ["", NOTES[row.design]]
    if row.label in VARIANT_NOTES:
        out += ["", VARIANT_NOTES[row.label]]
    out += _seed001(row, comp)
    other = [
        inv
        for inv, _ in PROPERTIES
        if row.cells.get(inv)
        and row.cells[inv].status == "violated"
        and inv not in DECIDES.get(row.design, ())
    ]
    if other:
        out += ["", "Also violated: " + "; ".join(_evidence(row, inv, base) for inv in other) + "."]
    return out + [""]


def _seed001(row: Row, comp: Comparison) -> list[str]:
    """Seed 001's offsets in ping answers and per-thread ownership, as this run measured them."""
    out = []
    m = row.measures
    if row.design == "broker-coordinator" and m and m["crash"].reread_ms is not None:
        out.append(
            "Offsets travel only in ping and StopFetcher answers (seed 001 section 11): in the liveness runs the "
            f"new owners read again {m['crash'].reread_ms / 1000:.1f} s of consumption after a crash, "
            f"{(m['leave'].reread_ms or 0) / 1000:.1f} s after a clean shutdown (which waits for a second ping, "
            f"converging in {_secs(m['leave'].converged_ms)}) and {(m['failover'].reread_ms or 0) / 1000:.1f} s after "
            "a coordinator failover (summed over partitions; scenario `broker-offsets-in-ping-answers`)."
        )
    if row.label == "broker-coordinator" and comp.threads:
        one, two = comp.threads[1], comp.threads[2]
        out.append(
            f"Per-thread ownership: one rebalance of {one.members} members, {one.topics} topics of "
            f"{2 * one.members} partitions, costs {two.bytes:,} bytes with 2 threads per consumer and "
            f"{one.bytes:,} with 1 (`model/designs/cost.py`, `broker`)."
        )
    return [x for line in out for x in ("", line)]


def write(comp: Comparison, path: Path, command: str) -> Path:
    base = path.parent
    rows = {r.label: r for r in comp.rows}
    lines = [
        "# Design review: the designs the source documents weighed, run side by side",
        "",
        f"Generated by `{command}` (seed {comp.seed}, {comp.workloads} random workloads per design plus the",
        "scenarios in `specs/scenarios/designs/`). Every design runs the same design-neutral workloads",
        "(`model/designs/ops.py`) and is judged by the same predicates (`model/designs/invariants.py`,",
        "statements and sources in `specs/design-invariants.yaml`). Ownership is judged per generation, as",
        "`classic.single_owner_consumer` does; a design whose ownership carries no generation (seed 001) is",
        "judged on physical ownership, since nothing there tells a stale owner's work from the current one's.",
        "Liveness is judged after a quiet `settle` of 30 s (five session timeouts). Each violation links a",
        "shrunk counterexample trace; `groupcheck design replay TRACE` re-runs it (FAILED on the design) and",
        "`groupcheck design replay TRACE --design shipped` runs it on the shipped protocol (PASSED).",
        "",
        "## Designs x properties",
        "",
        "| design | source | "
        + " | ".join(name for _, name in PROPERTIES)
        + " | bytes / msgs per rebalance, 500 members |",
        "|---|---|" + "---|" * len(PROPERTIES) + "---|",
    ]
    from model.designs import DESIGNS

    figure = _link(comp.figures["bytes"], base) if "bytes" in comp.figures else ""
    for r in comp.rows:
        c = _cost_at(comp, r.design, 500) if not r.options else None
        j = _join_at(comp, r.design, 500) if not r.options else None
        cost_text = "as its design" if r.options else "-"
        if c:
            cost_text = f"[{c[1]:,} / {c[0]:,}]({figure})" if figure else f"{c[1]:,} / {c[0]:,}"
        elif j:
            trips = "round trip" if j[2] == 1 else "round trips"
            cost_text = f"first join: {j[1]:,} / {j[0]:,} ({j[2]} {trips})"
        cells = " | ".join(_cell(r, inv, base) for inv, _ in PROPERTIES)
        lines.append(f"| `{r.label}` | {DESIGNS[r.design].source} | {cells} | {cost_text} |")
    lines += ["", "## Figures", ""]
    captions = {
        "bytes": "Bytes of one rebalance against group size (10 topics; partitions per topic = members).",
        "messages": "Messages of one rebalance against group size.",
        "topics": "Bytes of one rebalance against subscription size, 50 members (partitions per topic = members).",
        "storms": "Rebalances during 30 s of metadata churn (a subscribed topic grows every 2 s; an unrelated topic grows every 2 s) and a member that joins and leaves every 1.5 s.",
        "converge": "Time until every partition is owned and ownership stops moving, after a join, a leave, a crash and a coordinator failover.",
    }
    for key, fig in comp.figures.items():
        lines += [f"![{captions[key]}]({_link(fig, base)})", "", f"*{captions[key]}*", ""]
    if comp.costs:
        sizes = [c.members for c in next(iter(comp.costs.values()))]
        lines += [
            "## Cost of one rebalance",
            "",
            "| design | " + " | ".join(f"{n} members: msgs / bytes" for n in sizes) + " |",
            "|---|" + "---|" * len(sizes),
        ]
        for design, costs in comp.costs.items():
            lines.append(
                f"| `{design}` | " + " | ".join(f"{c.messages:,} / {c.bytes:,}" for c in costs) + " |"
            )
        lines.append("")
    if comp.join_costs:
        sizes = [c.members for c in next(iter(comp.join_costs.values()))]
        lines += [
            "## Cost of a first join under KIP-848",
            "",
            "KIP-848 has no rebalance round; the designs differ in the joining member's own heartbeats until",
            "the coordinator adds it (`model/designs/cost_kip848.py`, 10 topics subscribed).",
            "",
            "| design | " + " | ".join(f"{n} members: msgs / bytes / round trips" for n in sizes) + " |",
            "|---|" + "---|" * len(sizes),
        ]
        for design, joins in comp.join_costs.items():
            lines.append(
                f"| `{design}` | "
                + " | ".join(f"{c.messages:,} / {c.bytes:,} / {c.round_trips}" for c in joins)
                + " |"
            )
        lines.append("")
    measured = [r for r in comp.rows if r.measures]
    if measured:
        lines += [
            "## Liveness and upgrade",
            "",
            "3 members, topic t with 6 partitions (`conformance/designs/measure.py`): time to converge from the",
            "trigger and the rebalances it took; availability = share of 100 ms ticks with every partition owned;",
            "balance: the busiest member's partitions over the even share, 5 members and 20 partitions.",
            "",
        ]
        lines += [
            "| design | join | leave | crash | failover | churn: rebalances / availability "
            "| unrelated-topic churn: rebalances | flapping member: rebalances / availability "
            "| rolling upgrade: strategy after / availability | balance |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in measured:
            m = r.measures
            conv = {
                w: f"{_secs(m[w].converged_ms)}, {m[w].rebalances} reb."
                for w in ("join", "leave", "crash", "failover")
            }
            lines.append(
                f"| `{r.label}` | {conv['join']} | {conv['leave']} | {conv['crash']} | {conv['failover']} | "
                f"{m['churn-subscribed'].rebalances} / {m['churn-subscribed'].availability:.2f} | "
                f"{m['churn-other-topic'].rebalances} | {m['flapping-member'].rebalances} / {m['flapping-member'].availability:.2f} | "
                f"{m['rolling-upgrade'].final_strategy or '-'} / {m['rolling-upgrade'].availability:.2f} | {r.balance} |"
            )
        lines.append("")
    if comp.scenarios:
        lines += [
            "## Scenarios the seeds name",
            "",
            "`specs/scenarios/designs/`, run with `groupcheck design scenarios`; each line is one expectation.",
            "",
            "| scenario | source | design | outcome | as expected |",
            "|---|---|---|---|---|",
        ]
        for sc, outcomes in comp.scenarios:
            for out in outcomes:
                e = out.expectation
                seen = ", ".join(f"`{v}` violated" for v in out.result.violated) or "nothing violated"
                label = e.design + (
                    ":" + ",".join(f"{k}={v}" for k, v in sorted(e.options.items())) if e.options else ""
                )
                lines.append(
                    f"| `{sc.id}` | {sc.source} | `{label}` | {seen} | {'yes' if out.met else '**no**'} |"
                )
        lines.append("")
    lines += ["## The designs", ""]
    for r in comp.rows:
        lines += _paragraph(r, comp, base, rows)
    ok = (
        "every linked trace replays FAILED on its design and PASSED on its baseline"
        if comp.replays_ok()
        else "SOME linked traces do not replay as expected: see the tables"
    )
    lines += ["## Replay check", "", f"In this run {ok}.", ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path

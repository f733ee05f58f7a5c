"""Cross-step and cross-trace checks over the lake's flat columns, as SQL (Spark SQL and DuckDB).

These are the time-window properties a single observation cannot see, checked as relational jobs
over every trace at once (docs/pipeline.md). Each has an id in the `window.` namespace:

* `window.single_holder`: at no step do two clients that are Stable in the group's current
  generation both own one partition (the consumer-view form of KAFKA-7026; docs/protocol-reference.md#c4).
* `window.generation_monotonic`: per trace the group generation never decreases, except that a
  coordinator failover may fall back to (not below) the last persisted generation
  ("Handling Coordinator Failures", docs/protocol-reference.md#client-side-assignment; same rule as `classic.generation_monotonic`).
* `window.ownerless_bound`: while the group stays Stable, a partition of a subscribed topic is
  without a Stable current-generation owner for at most `bound_ms` of virtual time. A span is a run
  of consecutive steps at which the partition is ownerless; a step that is not Stable, where the
  topic is not subscribed or the partition does not exist, or a gap in the step numbers ends it.

One scan of the nested columns (`CANDIDATES`, materialised as table `candidates`): rows are
grouped into states (trace, generation, group state, the Stable current-generation holdings as
(client, topic, partition), subscriptions, partition counts) with the list of their (step, now);
a trace repeats a state over many steps, so the owner checks, array functions on (topic,
partition) structs, run once per state, not per row. Only states with a doubly held or an
ownerless partition are kept, so the two checks reading `candidates` group and window a few rows
instead of every partition of every step. `generation_monotonic` reads only the flat columns
and windows only the suspect traces (`windows_explode.GENERATION_MONOTONIC_SUSPECTS`).
This is the faster form on DuckDB; on Spark, which interprets array lambdas, it showed no
consistent gain over the exploding form of `windows_explode`; `pipeline audit` runs the keyed form
of `windows_keyed` there (benchmarks/results/pipeline.md). `python_window_checks` is the plain-Python form of the same
checks (`conformance.engine.windows`).
"""

from __future__ import annotations

import re

from conformance.engine.windows import DEFAULT_OWNERLESS_BOUND_MS, python_window_checks
from conformance.pipeline.windows_explode import GENERATION_MONOTONIC_SUSPECTS, SPANS

_DIALECT = {
    "spark": {
        "explode": "explode",
        "filter": "filter",
        "transform": "transform",
        "flatten": "flatten",
        "distinct": "array_distinct",
        "size": "size",
        "contains": "array_contains",
        "seq": "sequence(0, {n} - 1)",
        "string": "STRING",
        "collect": "collect_list",
    },
    "duckdb": {
        "explode": "unnest",
        "filter": "list_filter",
        "transform": "list_transform",
        "flatten": "flatten",
        "distinct": "list_distinct",
        "size": "len",
        "contains": "list_contains",
        "seq": "generate_series(0, {n} - 1)",
        "string": "VARCHAR",
        "collect": "list",
    },
}

#: Per state: `doubled` (its stable current-generation holdings, when a (topic, partition) occurs
#: in them twice) and `gaps` (the partitions of subscribed topics that no such holding covers, when
#: the group is Stable). A state with neither is dropped. `n > 0` (always true) keeps optimisers
#: from moving these expressions below the grouping, where they would run once per row again.
#: Spark's `sequence(0, -1)` is not empty, hence the `partitions > 0` guard.
CANDIDATES = """
WITH rows AS (
  SELECT trace_id, step, now, generation, group_state, subscribed, topic_partitions,
         {transform}({filter}(holdings, h -> h.phase = 'stable' AND h.generation = generation),
                     h -> named_struct('client', h.client, 'topic', h.topic, 'partition', h.partition)) AS held
  FROM lake
),
states AS (
  SELECT trace_id, generation, group_state, held, subscribed, topic_partitions,
         {collect}(named_struct('step', step, 'now', now)) AS steps, count(*) AS n
  FROM rows
  GROUP BY trace_id, generation, group_state, held, subscribed, topic_partitions
),
keyed AS (
  SELECT *, {transform}(held, h -> named_struct('topic', h.topic, 'partition', h.partition)) AS keys FROM states
),
flagged AS (
  SELECT trace_id, steps, generation,
         CASE WHEN n > 0 AND generation IS NOT NULL AND {size}({distinct}(keys)) < {size}(keys) THEN held END AS doubled,
         CASE WHEN n > 0 AND group_state = 'Stable' THEN {flatten}({transform}(
           {filter}(topic_partitions, tp -> tp.partitions > 0 AND {contains}(subscribed, tp.topic)),
           tp -> {transform}(
             {filter}({seq}, p -> NOT {contains}(keys, named_struct('topic', tp.topic, 'partition', p))),
             p -> named_struct('topic', tp.topic, 'partition', p)))) END AS gaps
  FROM keyed
)
SELECT * FROM flagged WHERE doubled IS NOT NULL OR {size}(gaps) > 0
"""

SINGLE_HOLDER = """
SELECT trace_id, min(step) AS step, 'window.single_holder' AS invariant,
       min(concat(topic, '-', CAST(part AS STRING), ' held by ', CAST(holders AS STRING),
                  ' clients in generation ', CAST(generation AS STRING))) AS message
FROM (
  SELECT trace_id, step, generation, h.topic AS topic, h.partition AS part, count(DISTINCT h.client) AS holders
  FROM (SELECT trace_id, step, generation, {explode}(doubled) AS h
        FROM (SELECT trace_id, a.step AS step, generation, doubled
              FROM (SELECT trace_id, generation, doubled, {explode}(steps) AS a
                    FROM candidates WHERE doubled IS NOT NULL) s) d) x
  GROUP BY trace_id, step, generation, h.topic, h.partition
  HAVING count(DISTINCT h.client) > 1
) v
GROUP BY trace_id
"""

OWNERLESS = (
    """
WITH ownerless AS (
  SELECT trace_id, step, now, g.topic AS topic, g.partition AS part
  FROM (SELECT trace_id, a.step AS step, a.now AS now, {explode}(gaps) AS g
        FROM (SELECT trace_id, gaps, {explode}(steps) AS a FROM candidates WHERE {size}(gaps) > 0) s) x
),
"""
    + SPANS
)

CHECKS = {
    "window.single_holder": SINGLE_HOLDER,
    "window.generation_monotonic": GENERATION_MONOTONIC_SUSPECTS,
    "window.ownerless_bound": OWNERLESS,
}


_NAMED_STRUCT = re.compile(r"named_struct\(([^()]*)\)")


def _struct_pack(m: re.Match[str]) -> str:
    """Spark's named_struct('a', x, 'b', y) as DuckDB's struct_pack(a := x, b := y)."""
    parts = [p.strip() for p in m.group(1).split(",")]
    return (
        "struct_pack("
        + ", ".join(f"{n.strip(chr(39))} := {v}" for n, v in zip(parts[::2], parts[1::2], strict=True))
        + ")"
    )


def _dialect(text: str, dialect: str) -> str:
    d = _DIALECT[dialect]
    text = text.replace("{seq}", d["seq"].replace("{n}", "tp.partitions"))
    if dialect == "duckdb":
        text = _NAMED_STRUCT.sub(_struct_pack, text)
    for word in ("explode", "filter", "transform", "flatten", "distinct", "size", "contains", "collect"):
        text = text.replace("{" + word + "}", d[word])
    return text.replace("AS STRING", "AS " + d["string"])


def candidates_sql(dialect: str) -> str:
    """The one scan of table `lake`, to be materialised as table `candidates` (Spark: a
    checkpointed temporary view; DuckDB: a temporary table) before the checks run."""
    return _dialect(CANDIDATES, dialect)


def window_sql(check: str, dialect: str, bound_ms: int = DEFAULT_OWNERLESS_BOUND_MS) -> str:
    """The SQL of one check over tables `lake` and `candidates`; one row per violating trace (its
    first step)."""
    return _dialect(CHECKS[check], dialect).replace("{bound}", str(int(bound_ms)))


__all__ = ["CHECKS", "DEFAULT_OWNERLESS_BOUND_MS", "candidates_sql", "python_window_checks", "window_sql"]

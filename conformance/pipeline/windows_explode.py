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

The same SQL text runs on Spark and DuckDB (dialect words such as `explode`/`unnest` and
`filter`/`list_filter` differ). It is written for engines without a cheap join: the owner checks
are per-row array predicates and spans are gaps-and-islands over the ownerless rows only (no
join of exploded partitions with exploded holdings). `python_window_checks` is
the plain-Python implementation of the same three checks (`conformance.engine.windows`, where
`groupcheck replay` runs it too), used by the benchmark and to cross-check the SQL in the tests.
`windows` holds the grouped-states form of the same checks (faster on DuckDB, slower on Spark),
`windows_keyed` the keyed form that `pipeline audit` runs on Spark (faster there).
"""

from __future__ import annotations

from conformance.engine.windows import DEFAULT_OWNERLESS_BOUND_MS, python_window_checks

_HELD = "{filter}(holdings, h -> h.phase = 'stable' AND h.generation = generation)"
_DIALECT = {
    "spark": {
        "explode": "explode",
        "seq": "sequence(0, {n} - 1)",
        "filter": "filter",
        # held holds each client's partition once, so a repeated (topic, partition) is a double
        # holder; arrays_zip and array_contains on structs are compiled, lambdas are interpreted
        "doubled": "size(array_distinct(arrays_zip(held.topic, held.partition))) < size(held)",
        "held_keys": "arrays_zip(held.topic, held.partition)",
        "owned": "array_contains(held, struct(topic AS topic, part AS partition))",
    },
    "duckdb": {
        "explode": "unnest",
        "seq": "generate_series(0, {n} - 1)",
        "filter": "list_filter",
        "doubled": "len(list_distinct(list_transform(held, h -> h.topic || '-' || CAST(h.partition AS STRING))))"
        " < len(held)",
        "held_keys": "list_transform(held, h -> h.topic || '-' || CAST(h.partition AS STRING))",
        "owned": "list_contains(held, topic || '-' || CAST(part AS STRING))",
    },
}

SINGLE_HOLDER = """
WITH held AS (
  SELECT trace_id, step, generation, {held} AS held FROM lake WHERE generation IS NOT NULL
),
doubled AS (
  SELECT trace_id, step, generation, held FROM held WHERE {doubled}
)
SELECT trace_id, min(step) AS step, 'window.single_holder' AS invariant,
       min(concat(topic, '-', CAST(part AS STRING), ' held by ', CAST(holders AS STRING),
                  ' clients in generation ', CAST(generation AS STRING))) AS message
FROM (
  SELECT trace_id, step, generation, h.topic AS topic, h.partition AS part, count(DISTINCT h.client) AS holders
  FROM (SELECT trace_id, step, generation, {explode}(held) AS h FROM doubled) x
  GROUP BY trace_id, step, generation, h.topic, h.partition
  HAVING count(DISTINCT h.client) > 1
) v
GROUP BY trace_id
"""

GENERATION_MONOTONIC = """
SELECT trace_id, min(step) AS step, 'window.generation_monotonic' AS invariant,
       min(concat('generation ', CAST(prev AS STRING), ' -> ', CAST(generation AS STRING))) AS message
FROM (
  SELECT trace_id, step, generation, failover,
         lag(generation) OVER (PARTITION BY trace_id ORDER BY step) AS prev,
         lag(persisted_generation) OVER (PARTITION BY trace_id ORDER BY step) AS prev_persisted
  FROM lake
) w
WHERE generation < prev AND NOT (failover AND generation >= coalesce(prev_persisted, 0))
GROUP BY trace_id
"""

#: `GENERATION_MONOTONIC` over the suspect traces only. A trace whose non-null generations, grouped
#: by value, occupy step ranges in the order of their values (each value's last step before the next
#: value's first) has no step whose generation is below the one before it: if step s followed s'
#: with g(s) < g(s'), the ranges in value order from g(s) up to g(s') would put s before s'. Only the
#: other traces (a few in a hundred in the benchmark's lakes, failovers among them) are windowed
#: step by step; grouping 10M rows into (trace, generation) ranges is a partial aggregation that
#: shuffles little, where the window sorts every row (benchmarks/results/pipeline.md#suspects).
#: Ties in step count as suspect, and NULL trace ids match each other as in the plain form.
GENERATION_MONOTONIC_SUSPECTS = """
WITH generation_ranges AS (
  SELECT trace_id, generation, min(step) AS lo, max(step) AS hi
  FROM lake WHERE generation IS NOT NULL GROUP BY trace_id, generation
),
suspects AS (
  SELECT DISTINCT trace_id FROM (
    SELECT trace_id, lo, lag(hi) OVER (PARTITION BY trace_id ORDER BY generation) AS prev_hi
    FROM generation_ranges) r
  WHERE lo <= prev_hi
)
""" + GENERATION_MONOTONIC.replace(
    "  FROM lake\n",
    "  FROM lake WHERE EXISTS (SELECT 1 FROM suspects s WHERE s.trace_id IS NOT DISTINCT FROM lake.trace_id)\n",
)

#: the spans of consecutive ownerless steps and the check over them, for a CTE named `ownerless`
#: (shared by every window form)
SPANS = """spans AS (
  SELECT trace_id, topic, part, min(step) AS first_step, max(now) - min(now) AS ms
  FROM (SELECT *, step - row_number() OVER (PARTITION BY trace_id, topic, part ORDER BY step) AS island
        FROM ownerless) i
  GROUP BY trace_id, topic, part, island
)
SELECT trace_id, min(first_step) AS step, 'window.ownerless_bound' AS invariant,
       min(concat(topic, '-', CAST(part AS STRING), ' without owner for ', CAST(ms AS STRING),
                  ' ms while Stable')) AS message
FROM spans WHERE ms > {bound}
GROUP BY trace_id
"""

OWNERLESS = (
    """
WITH parts AS (
  SELECT trace_id, step, now, held, tp.topic AS topic, {explode}({seq}) AS part
  FROM (SELECT trace_id, step, now, subscribed, {explode}(topic_partitions) AS tp, {held_keys} AS held
        FROM (SELECT trace_id, step, now, subscribed, topic_partitions, {held} AS held
              FROM lake WHERE group_state = 'Stable') s) t
  WHERE array_contains(subscribed, tp.topic)
),
ownerless AS (
  SELECT trace_id, step, now, topic, part FROM parts WHERE NOT {owned}
),
"""
    + SPANS
)

CHECKS = {
    "window.single_holder": SINGLE_HOLDER,
    "window.generation_monotonic": GENERATION_MONOTONIC,
    "window.ownerless_bound": OWNERLESS,
}


#: One scan for the three checks: the columns they read, with the stable current-generation holdings
#: filtered once (the one lambda), materialised as table `prep` (Spark: a persisted DataFrame; DuckDB:
#: a temporary table). The checks then read `prep` (`window_sql(..., prepared=True)`) instead of
#: decoding the nested `holdings` column of the lake twice and filtering it twice.
PREPARE = """
SELECT trace_id, step, now, group_state, generation, failover, persisted_generation, subscribed,
       topic_partitions, {held} AS held
FROM lake
"""


def prepare_sql(dialect: str) -> str:
    """The SELECT whose result the prepared checks read as table `prep`."""
    return PREPARE.replace("{held}", _HELD).replace("{filter}", _DIALECT[dialect]["filter"])


def window_sql(
    check: str, dialect: str, bound_ms: int = DEFAULT_OWNERLESS_BOUND_MS, prepared: bool = False
) -> str:
    """The SQL of one check for a table named `lake` (or `prep`, see `PREPARE`); one row per
    violating trace (its first step)."""
    d = _DIALECT[dialect]
    text = CHECKS[check].replace("{seq}", d["seq"].replace("{n}", "tp.partitions"))
    if prepared:
        text = text.replace("{held} AS held", "held").replace("FROM lake", "FROM prep")
    text = text.replace("{held}", _HELD)
    for word in ("doubled", "held_keys", "owned", "explode", "filter"):
        text = text.replace("{" + word + "}", d[word])
    text = text.replace("{bound}", str(int(bound_ms)))
    if dialect == "duckdb":
        text = text.replace("AS STRING", "AS VARCHAR").replace("array_contains(", "list_contains(")
    return text


__all__ = ["CHECKS", "DEFAULT_OWNERLESS_BOUND_MS", "prepare_sql", "python_window_checks", "window_sql"]

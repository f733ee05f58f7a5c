"""The window checks in the form Spark runs fastest: one scan into per-row candidates keyed by longs.

The same three checks as `windows_explode` and `windows` (their docstrings give the rules), for
Spark SQL only. One scan of the nested columns (`CANDIDATES`, materialised as table `candidates`,
a local checkpoint) computes per row:

* `held`: the Stable current-generation holdings (one `filter`);
* `keys`: each held (topic, partition) as one long, the topic's 1-based position in the row's
  `topic_partitions` times 2^32 plus the partition (a topic the row does not list gets position 0;
  partitions are non-negative ints below 2^31, so two keys are equal exactly when topic and
  partition are, among the row's listed topics);
* `expected`: on a Stable row, the keys of every partition of every subscribed topic, as one
  `sequence` of longs per topic;
* `doubled` (the held holdings when a key repeats; the single-holder aggregation then counts the
  distinct clients per (topic, partition) exactly) and `gaps` (`array_except(expected, keys)`, turned
  back into (topic, partition)).

Only rows with a doubled or an ownerless partition are kept. Why this shape (measurements in
benchmarks/results/pipeline.md): Spark's set functions on arrays of structs (`array_distinct`,
`array_except`, `array_contains` on `arrays_zip` results) compare elements through an interpreted
ordering and were the main cost of the exploding form, while on arrays of longs they use a hash set;
a predicate that refers to a projected lambda is pushed below the projection and evaluates the lambda
again for each reference, which the one-row `LATERAL VIEW explode(array(...))` prevents; and the
exploded partitions of every Stable step (4 per row) never become rows. `generation_monotonic` reads
only the flat columns and windows only the suspect traces, as the grouped-states form does.
"""

from __future__ import annotations

from conformance.pipeline.windows_explode import (
    DEFAULT_OWNERLESS_BOUND_MS,
    GENERATION_MONOTONIC_SUSPECTS,
    SPANS,
)

_KEY = "CAST(array_position(topic_partitions.topic, {t}) AS BIGINT) * 4294967296"

CANDIDATES = """
WITH held AS (
  SELECT trace_id, step, now, generation, group_state, subscribed, topic_partitions, held
  FROM lake LATERAL VIEW explode(array(
    filter(holdings, h -> h.phase = 'stable' AND h.generation = generation))) one AS held
),
keyed AS (
  SELECT trace_id, step, now, generation, topic_partitions, held, k.keys AS keys, k.expected AS expected
  FROM held LATERAL VIEW explode(array(named_struct(
    'keys', transform(held, h -> {held_key} + h.partition),
    'expected', CASE WHEN group_state = 'Stable' THEN flatten(transform(
        filter(topic_partitions, tp -> tp.partitions > 0 AND array_contains(subscribed, tp.topic)),
        tp -> sequence({topic_key}, {topic_key} + tp.partitions - 1))) END))) one AS k
),
flagged AS (
  SELECT trace_id, step, now, generation, topic_partitions,
         CASE WHEN generation IS NOT NULL AND size(array_distinct(keys)) < size(keys) THEN held END AS doubled,
         array_except(expected, keys) AS gaps
  FROM keyed
)
SELECT trace_id, step, now, generation, doubled,
       transform(gaps, g -> named_struct(
         'topic', element_at(topic_partitions, CAST(g DIV 4294967296 AS INT)).topic,
         'partition', CAST(g % 4294967296 AS INT))) AS gaps
FROM flagged
WHERE doubled IS NOT NULL OR size(gaps) > 0
""".replace("{held_key}", _KEY.format(t="h.topic")).replace("{topic_key}", _KEY.format(t="tp.topic"))

SINGLE_HOLDER = """
SELECT trace_id, min(step) AS step, 'window.single_holder' AS invariant,
       min(concat(topic, '-', CAST(part AS STRING), ' held by ', CAST(holders AS STRING),
                  ' clients in generation ', CAST(generation AS STRING))) AS message
FROM (
  SELECT trace_id, step, generation, h.topic AS topic, h.partition AS part, count(DISTINCT h.client) AS holders
  FROM (SELECT trace_id, step, generation, explode(doubled) AS h FROM candidates WHERE doubled IS NOT NULL) x
  GROUP BY trace_id, step, generation, h.topic, h.partition
  HAVING count(DISTINCT h.client) > 1
) v
GROUP BY trace_id
"""

OWNERLESS = (
    """
WITH ownerless AS (
  SELECT trace_id, step, now, g.topic AS topic, g.partition AS part
  FROM (SELECT trace_id, step, now, explode(gaps) AS g FROM candidates WHERE size(gaps) > 0) x
),
"""
    + SPANS
)

CHECKS = {
    "window.single_holder": SINGLE_HOLDER,
    "window.generation_monotonic": GENERATION_MONOTONIC_SUSPECTS,
    "window.ownerless_bound": OWNERLESS,
}


def candidates_sql() -> str:
    """The one scan of table `lake` (Spark SQL), to be materialised as table `candidates`."""
    return CANDIDATES


def window_sql(check: str, bound_ms: int = DEFAULT_OWNERLESS_BOUND_MS) -> str:
    """The Spark SQL of one check over tables `lake` and `candidates`; one row per violating trace
    (its first step)."""
    return CHECKS[check].replace("{bound}", str(int(bound_ms)))


__all__ = ["CHECKS", "DEFAULT_OWNERLESS_BOUND_MS", "candidates_sql", "window_sql"]

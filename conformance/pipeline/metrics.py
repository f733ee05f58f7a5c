"""Metrics and coverage over a trace lake, as Spark SQL.

Per assignor and variant (read from each run's `config`): rebalance length in steps and virtual ms
(a maximal run of PreparingRebalance/CompletingRebalance steps, or Assigning/Reconciling for the
consumer protocol), partitions moved per completed rebalance (a partition whose Stable owner at
the new generation differs from its owner at the previous one), and time without an owner while
Stable (spans as in `windows.OWNERLESS`). Each comes as a summary table and as the per-rebalance /
per-span rows the plots are drawn from (`plots`).

Coverage: distinct states and transitions between consecutive steps, over the coarse state every
lake has (protocol, group state, members, members at the current generation) and, in a swarm run
with `--coverage`, over the `abstract_state` column (the keys of `groupcheck explore`); how many
new ones each run found (the growth curve), and the group-state edges walked.
"""

from __future__ import annotations

from conformance.pipeline.windows_explode import _DIALECT, _HELD

_CONFIG = """
  protocol,
  coalesce(get_json_object(config, '$.assignor'), CASE WHEN protocol = 'consumer' THEN 'uniform' END) AS assignor,
  concat_ws(' ',
    CASE WHEN get_json_object(config, '$.assignor') = 'sticky'
          AND get_json_object(config, '$.variants.sticky') = 'v0' THEN 'sticky=v0' END,
    CASE WHEN get_json_object(config, '$.assignor') = 'cooperative-sticky'
          AND get_json_object(config, '$.variants.cooperative_adjust') = 'false' THEN 'no-adjust' END,
    CASE WHEN get_json_object(config, '$.variants.heartbeat_version') = '0' THEN 'heartbeat=v0' END,
    CASE WHEN get_json_object(config, '$.variants.mutant') IS NOT NULL
         THEN concat('mutant=', get_json_object(config, '$.variants.mutant')) END) AS variant
"""

_REBALANCE_SPANS = """
WITH flagged AS (
  SELECT trace_id, step, now, {config},
         group_state IN ('PreparingRebalance', 'CompletingRebalance', 'Assigning', 'Reconciling') AS busy
  FROM lake
),
islands AS (
  SELECT *, row_number() OVER (PARTITION BY trace_id ORDER BY step)
          - row_number() OVER (PARTITION BY trace_id, busy ORDER BY step) AS island
  FROM flagged
),
spans AS (
  SELECT trace_id, protocol, assignor, variant, count(*) AS steps, max(now) - min(now) AS ms
  FROM islands WHERE busy GROUP BY trace_id, protocol, assignor, variant, island
)
"""

REBALANCES = (
    _REBALANCE_SPANS
    + """
SELECT protocol, assignor, variant, count(*) AS rebalances, avg(steps) AS avg_steps,
       percentile_approx(steps, 0.95) AS p95_steps, avg(ms) AS avg_ms, max(ms) AS max_ms
FROM spans GROUP BY protocol, assignor, variant ORDER BY protocol, assignor, variant
"""
)

REBALANCE_SPANS = _REBALANCE_SPANS + "SELECT protocol, assignor, variant, steps, ms FROM spans"

_MOVED = """
WITH owners AS (
  SELECT trace_id, {config}, generation, h.topic AS topic, h.partition AS part, min(h.client) AS owner
  FROM (SELECT trace_id, protocol, config, generation, {explode}(holdings) AS h FROM lake
        WHERE group_state = 'Stable') x
  WHERE h.phase = 'stable' AND h.generation = generation
  GROUP BY trace_id, protocol, config, generation, h.topic, h.partition
),
changes AS (
  SELECT trace_id, protocol, assignor, variant, generation,
         CASE WHEN owner <> lag(owner) OVER (PARTITION BY trace_id, topic, part ORDER BY generation)
              THEN 1 ELSE 0 END AS moved
  FROM owners
),
per_gen AS (
  SELECT trace_id, protocol, assignor, variant, generation, sum(moved) AS moved
  FROM changes GROUP BY trace_id, protocol, assignor, variant, generation
)
"""

MOVED = (
    _MOVED
    + """
SELECT protocol, assignor, variant, count(*) AS stable_generations, avg(moved) AS avg_moved, max(moved) AS max_moved
FROM per_gen GROUP BY protocol, assignor, variant ORDER BY protocol, assignor, variant
"""
)

MOVED_ROWS = _MOVED + "SELECT protocol, assignor, variant, moved FROM per_gen"

_OWNERLESS = """
WITH parts AS (
  SELECT trace_id, step, now, protocol, assignor, variant, held, tp.topic AS topic, {explode}({seq}) AS part
  FROM (SELECT trace_id, step, now, {config}, subscribed, {explode}(topic_partitions) AS tp, {held_keys} AS held
        FROM (SELECT trace_id, step, now, protocol, config, subscribed, topic_partitions, {held} AS held
              FROM lake WHERE group_state = 'Stable') s) t
  WHERE array_contains(subscribed, tp.topic)
),
spans AS (
  SELECT trace_id, protocol, assignor, variant, max(now) - min(now) AS ms
  FROM (SELECT *, step - row_number() OVER (PARTITION BY trace_id, topic, part ORDER BY step) AS island
        FROM parts WHERE NOT {owned}) i
  GROUP BY trace_id, protocol, assignor, variant, topic, part, island
)
"""

OWNERLESS_SPANS = (
    _OWNERLESS
    + """
SELECT protocol, assignor, variant, count(*) AS spans, avg(ms) AS avg_ms,
       percentile_approx(ms, 0.95) AS p95_ms, max(ms) AS max_ms
FROM spans GROUP BY protocol, assignor, variant ORDER BY protocol, assignor, variant
"""
)

OWNERLESS_ROWS = _OWNERLESS + "SELECT protocol, assignor, variant, ms FROM spans"

#: the coarse state of a step: every lake has it
COARSE_STATE = """concat(protocol, '|', coalesce(group_state, 'none'), '|m', CAST(member_count AS STRING), '|s',
  CAST(size(array_distinct(filter(holdings, h -> h.phase = 'stable' AND h.generation = generation).client)) AS STRING))"""

_STATES = """
WITH states AS (
  SELECT trace_id, run_index, step, protocol, coalesce(group_state, 'none') AS gs, {state} AS state FROM lake
),
edges AS (
  SELECT trace_id, run_index, protocol, gs AS dst_gs, state AS dst,
         lag(gs) OVER (PARTITION BY trace_id ORDER BY step) AS src_gs,
         lag(state) OVER (PARTITION BY trace_id ORDER BY step) AS src
  FROM states
)
"""

COVERAGE = (
    _STATES
    + """
SELECT s.protocol, s.states, coalesce(t.transitions, 0) AS transitions, s.runs
FROM (SELECT protocol, count(DISTINCT state) AS states, count(DISTINCT trace_id) AS runs FROM states GROUP BY protocol) s
LEFT JOIN (SELECT protocol, count(DISTINCT concat(src, '>', dst)) AS transitions
           FROM edges WHERE src IS NOT NULL AND src <> dst GROUP BY protocol) t
  ON s.protocol = t.protocol
ORDER BY s.protocol
"""
)

GROWTH = (
    _STATES
    + """
SELECT coalesce(a.protocol, b.protocol) AS protocol, coalesce(a.run_index, b.run_index) AS run_index,
       coalesce(a.n, 0) AS new_states, coalesce(b.n, 0) AS new_transitions
FROM (SELECT protocol, first AS run_index, count(*) AS n
      FROM (SELECT protocol, state, min(run_index) AS first FROM states GROUP BY protocol, state) f
      GROUP BY protocol, first) a
FULL OUTER JOIN (SELECT protocol, first AS run_index, count(*) AS n
      FROM (SELECT protocol, src, dst, min(run_index) AS first FROM edges
            WHERE src IS NOT NULL AND src <> dst GROUP BY protocol, src, dst) f
      GROUP BY protocol, first) b
  ON a.protocol = b.protocol AND a.run_index = b.run_index
"""
)

STATE_EDGES = (
    _STATES
    + """
SELECT protocol, src_gs AS src, dst_gs AS dst, count(*) AS steps,
       count(DISTINCT CASE WHEN src <> dst THEN concat(src, '>', dst) END) AS abstract
FROM edges WHERE src_gs IS NOT NULL GROUP BY protocol, src_gs, dst_gs ORDER BY protocol, src, dst
"""
)

#: the abstract states and transitions of one protocol's runs (an explore graph is of one protocol:
#: classic keys and consumer keys must not be counted against each other's graph)
REACHED_STATES = """
SELECT DISTINCT abstract_state AS state FROM lake WHERE abstract_state IS NOT NULL AND protocol = '{protocol}'
"""
REACHED_EDGES = """
SELECT DISTINCT src, dst FROM (
  SELECT lag(abstract_state) OVER (PARTITION BY trace_id ORDER BY step) AS src, abstract_state AS dst FROM lake
  WHERE protocol = '{protocol}'
) e WHERE src IS NOT NULL AND dst IS NOT NULL AND src <> dst
"""

#: summary tables (Parquet + summary.md), then the rows the plots are drawn from
QUERIES = {
    "rebalances": REBALANCES,
    "moved": MOVED,
    "ownerless": OWNERLESS_SPANS,
    "coverage": COVERAGE,
    "rebalance_spans": REBALANCE_SPANS,
    "moved_rows": MOVED_ROWS,
    "ownerless_rows": OWNERLESS_ROWS,
    "growth": GROWTH,
    "state_edges": STATE_EDGES,
}
#: over the abstract states, when the lake has them
ABSTRACT_QUERIES = {"abstract": COVERAGE, "growth": GROWTH, "state_edges": STATE_EDGES}


def metrics_sql(name: str, abstract: bool = False) -> str:
    d = _DIALECT["spark"]
    text = (ABSTRACT_QUERIES if abstract and name in ABSTRACT_QUERIES else QUERIES)[name]
    text = text.replace("{state}", "abstract_state" if abstract else COARSE_STATE)
    text = text.replace("{config}", _CONFIG).replace("{held}", _HELD)
    for word in ("held_keys", "owned", "explode", "filter"):
        text = text.replace("{" + word + "}", d[word])
    return text.replace("{seq}", d["seq"].replace("{n}", "tp.partitions"))

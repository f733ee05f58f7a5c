"""Metrics and coverage over a trace lake, as SQL (Spark SQL; the DuckDB dialect as in `windows`).

Per assignor and variant (read from each run's `config`): rebalance length in steps and virtual ms
(a maximal run of PreparingRebalance/CompletingRebalance steps, or Assigning/Reconciling for the
consumer protocol), partitions moved per completed rebalance (a partition whose Stable owner at
the new generation differs from its owner at the previous one), and time without an owner while
Stable. Coverage: distinct abstract states (protocol, group state, members, members at the current
generation) and transitions between consecutive steps, against the count reached by the lake.
"""

from __future__ import annotations

from conformance.pipeline.windows import _DIALECT

_CONFIG = """
  CASE WHEN protocol = 'consumer' THEN 'uniform' ELSE get_json_object(config, '$.assignor') END AS assignor,
  coalesce(get_json_object(config, '$.variants.sticky'), '-') AS sticky,
  coalesce(get_json_object(config, '$.variants.mutant'), '-') AS mutant
"""

REBALANCES = """
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
  SELECT trace_id, assignor, sticky, mutant, count(*) AS steps, max(now) - min(now) AS ms
  FROM islands WHERE busy GROUP BY trace_id, assignor, sticky, mutant, island
)
SELECT assignor, sticky, mutant, count(*) AS rebalances, avg(steps) AS avg_steps,
       percentile_approx(steps, 0.95) AS p95_steps, avg(ms) AS avg_ms, max(ms) AS max_ms
FROM spans GROUP BY assignor, sticky, mutant ORDER BY assignor, sticky, mutant
"""

MOVED = """
WITH owners AS (
  SELECT trace_id, {config}, generation, h.topic AS topic, h.partition AS part, min(h.client) AS owner
  FROM (SELECT trace_id, protocol, config, generation, {explode}(holdings) AS h FROM lake
        WHERE group_state = 'Stable') x
  WHERE h.phase = 'stable' AND h.generation = generation
  GROUP BY trace_id, protocol, config, generation, h.topic, h.partition
),
changes AS (
  SELECT trace_id, assignor, sticky, mutant, generation,
         CASE WHEN owner <> lag(owner) OVER (PARTITION BY trace_id, topic, part ORDER BY generation)
              THEN 1 ELSE 0 END AS moved
  FROM owners
),
per_gen AS (
  SELECT trace_id, assignor, sticky, mutant, generation, sum(moved) AS moved
  FROM changes GROUP BY trace_id, assignor, sticky, mutant, generation
)
SELECT assignor, sticky, mutant, count(*) AS stable_generations, avg(moved) AS avg_moved, max(moved) AS max_moved
FROM per_gen GROUP BY assignor, sticky, mutant ORDER BY assignor, sticky, mutant
"""

OWNERLESS_SPANS = """
WITH parts AS (
  SELECT trace_id, step, now, group_state, {config}, tp.topic AS topic, {explode}({seq}) AS part
  FROM (SELECT trace_id, step, now, group_state, protocol, config, subscribed,
               {explode}(topic_partitions) AS tp FROM lake) t
  WHERE array_contains(subscribed, tp.topic)
),
owned AS (
  SELECT DISTINCT trace_id, step, h.topic AS topic, h.partition AS part
  FROM (SELECT trace_id, step, generation, {explode}(holdings) AS h FROM lake) x
  WHERE h.phase = 'stable' AND h.generation = generation
),
flagged AS (
  SELECT p.*, (p.group_state = 'Stable' AND o.trace_id IS NULL) AS ownerless
  FROM parts p LEFT JOIN owned o
    ON p.trace_id = o.trace_id AND p.step = o.step AND p.topic = o.topic AND p.part = o.part
),
islands AS (
  SELECT *, row_number() OVER (PARTITION BY trace_id, topic, part ORDER BY step)
          - row_number() OVER (PARTITION BY trace_id, topic, part, ownerless ORDER BY step) AS island
  FROM flagged
),
spans AS (
  SELECT assignor, sticky, mutant, max(now) - min(now) AS ms
  FROM islands WHERE ownerless GROUP BY trace_id, topic, part, island, assignor, sticky, mutant
)
SELECT assignor, sticky, mutant, count(*) AS spans, avg(ms) AS avg_ms,
       percentile_approx(ms, 0.95) AS p95_ms, max(ms) AS max_ms
FROM spans GROUP BY assignor, sticky, mutant ORDER BY assignor, sticky, mutant
"""

COVERAGE = """
WITH states AS (
  SELECT trace_id, step, protocol,
         concat(protocol, '|', coalesce(group_state, 'none'), '|m', CAST(member_count AS STRING), '|s',
                CAST(size(array_distinct(transform(filter(holdings, h -> h.phase = 'stable'
                     AND h.generation = generation), h -> h.client))) AS STRING)) AS state
  FROM lake
),
edges AS (
  SELECT protocol, lag(state) OVER (PARTITION BY trace_id ORDER BY step) AS src, state AS dst FROM states
)
SELECT s.protocol, s.states, t.transitions
FROM (SELECT protocol, count(DISTINCT state) AS states FROM states GROUP BY protocol) s
LEFT JOIN (SELECT protocol, count(DISTINCT concat(src, '>', dst)) AS transitions
           FROM edges WHERE src IS NOT NULL GROUP BY protocol) t
  ON s.protocol = t.protocol
"""

QUERIES = {"rebalances": REBALANCES, "moved": MOVED, "ownerless": OWNERLESS_SPANS, "coverage": COVERAGE}


def metrics_sql(name: str) -> str:
    d = _DIALECT["spark"]
    text = QUERIES[name].replace("{config}", _CONFIG)
    return text.replace("{seq}", d["seq"].replace("{n}", "tp.partitions")).replace("{explode}", d["explode"])

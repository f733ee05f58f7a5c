"""Violations found in a trace lake written as project traces (NDJSON v1, docs/traces.md#format), so that
`groupcheck replay` and `groupcheck show` work on them like on any `check` counterexample.

A lake row keeps what the trace needs: the run's configuration (`config`: seed, index, clients,
variants), the trace ops that led to the step (`ops`) and the event, responses and world after it.
The header's `setup`, `variants` and `seed` are the swarm's own simulator settings
(`conformance.engine.swarm.trace_setup`, `sim_seed`), a row's ops become step actions (ops that observed nothing,
such as a restart, are steps without an event) and the registry's checks are run again over the
decoded observations to fill each step's `checks`. An imported lake (`pipeline import`) carries
the source trace's header in `config` and is written the same way.

A registry violation's trace ends at the violating step. A `window.*` violation is a property of a
span of steps (an ownerless partition is seen only once the span is longer than the bound), so its
trace keeps the whole run; `replay` judges `window.*` ids again (`conformance.engine.windows`).
File name: `<invariant-id>_<fingerprint>.ndjson` in the audit's `counterexamples/`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any

from conformance import schema_check, strict
from conformance.engine.checker import Checker
from conformance.engine.swarm import config_from_json, sim_seed
from conformance.errors import UsageError
from conformance.formats import lake as codec
from conformance.formats import trace_limits
from conformance.formats.trace_file import (
    Check,
    Step,
    Trace,
    counterexample_path,
    groupcheck_version,
    header,
    write_trace,
)
from conformance.pipeline.swarm import hooks, trace_setup
from conformance.protocols import get_kit
from model.observation import Observation
from model.result import Delivery


def _header(first: Mapping[str, Any], lake: str, bound_ms: int) -> dict[str, Any]:
    """The trace header a lake trace's `config` cell describes, under the trace header's schema:
    a cell that does not make one is a UsageError naming the lake trace (the strict discipline of
    `conformance.strict`; the lake is input like any file)."""
    where = f"lake trace {str(first.get('trace_id'))[:80]}"
    try:
        config = strict.json_value(str(first["config"]))
        if not isinstance(config, dict):
            raise strict.Malformed("config is not a JSON object")
        head = _make_header(first, config, lake)
        schema_check.check(head, "trace-header")
    except strict.Malformed as exc:
        raise UsageError(exc.at(f"{where}: config")) from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(
            f"{where}: config does not describe a run ({type(exc).__name__}: {str(exc)[:80]})"
        ) from None
    head["origin"]["ownerless_bound_ms"] = bound_ms
    return head


def _make_header(first: Mapping[str, Any], config: dict[str, Any], lake: str) -> dict[str, Any]:
    origin: dict[str, Any] = {"kind": "swarm", "lake": lake, "trace_id": first["trace_id"]}
    if "source" in config:  # imported from a project trace: its header is kept in the config
        src = config["header"]
        origin = {"kind": "lake-import", "lake": lake, "source": config["source"], "of": src.get("origin")}
        head = header(
            protocol=src["protocol"],
            target=src["target"]["name"],
            target_version=src["target"]["version"],
            variants=dict(src["variants"]),
            seed=int(src["seed"]),
            origin=origin,
            setup=src["setup"],
        )
    else:
        cfg = config_from_json(first["config"])
        origin.update({"swarm_seed": cfg.seed, "run_index": cfg.index})
        head = header(
            protocol=cfg.protocol,
            target="model",
            target_version=groupcheck_version(),
            variants=dict(cfg.variants),
            seed=sim_seed(cfg),
            origin=origin,
            setup=trace_setup(cfg),
        )
    return head


def trace_from_rows(
    rows: Iterable[Mapping[str, Any]],
    window_violations: Iterable[tuple[int, str, str]] = (),
    *,
    upto: int | None = None,
    lake: str = "",
    bound_ms: int = 60_000,
) -> Trace:
    """The project trace of one lake trace's rows (steps 1..`upto`, all if None).

    `window_violations` are (lake step, invariant, message) from the SQL window checks; registry
    violations are found again by the checker while the steps are rebuilt. Rows that do not make
    a trace (the audit quarantines them) are a UsageError naming the lake trace: the file written
    from the result must read back (`read_trace`)."""
    rows = list(rows)
    try:
        return _trace(rows, window_violations, upto, lake, bound_ms)
    except (UsageError, codec.LakeFormatError):
        raise
    except Exception as exc:  # noqa: BLE001 - a malformed row of any kind: no replayable trace
        tid = str(rows[0].get("trace_id") if rows else None)[:80]
        raise UsageError(
            f"lake trace {tid}: rows do not make a trace ({type(exc).__name__}: {str(exc)[:100]})"
        ) from None


def _trace(
    rows: list[Mapping[str, Any]], window_violations: Iterable[tuple[int, str, str]], upto: int | None,
    lake: str, bound_ms: int,
) -> Trace:  # fmt: skip
    ordered = sorted(rows, key=lambda r: int(r["step"]))
    if upto is not None:
        ordered = [r for r in ordered if int(r["step"]) <= upto]
    if not ordered:
        raise ValueError("no rows for the counterexample")
    first = ordered[0]
    head = _header(first, lake, bound_ms)
    protocol = head["protocol"]
    checker = Checker(get_kit(protocol))
    before = codec.loads(str(first["before"])) if first.get("before") else None
    steps: list[Step] = []
    at_step: dict[int, int] = {}  # lake step -> trace step n
    violations: list[tuple[str, str, int]] = []
    now = 0
    for expected, r in enumerate(ordered, 1):
        where = f"lake trace {r['trace_id']} step {r['step']}"
        if int(r["step"]) != expected:
            raise UsageError(f"{where}: steps {expected}..{int(r['step']) - 1} are missing (truncated trace)")
        if r.get("ops") is None:
            raise UsageError(
                f"{where}: the lake has no `ops` column (written by an older swarm): run the swarm again"
            )
        ops = _ops(r["ops"], where)
        for op in ops[:-1]:  # ops that changed only a client: a step without an event
            steps.append(Step(len(steps) + 1, now, op))
        event, deliveries = codec.loads(str(r["event"])), tuple(codec.loads(str(r["deliveries"])))
        if not is_dataclass(event) or not all(isinstance(d, Delivery) for d in deliveries):
            raise UsageError(f"{where}: the event or the deliveries are not the model's")
        world, now = codec.loads(str(r["world"])), int(r["now"])
        obs = Observation(before, event, deliveries, world, now)
        n = len(steps) + 1
        found = checker.check(obs, n)
        violations += [(v.invariant, v.message, n) for v in found]
        steps.append(
            Step(
                n, now, ops[-1], event, deliveries, deliveries, checker.last_checked,
                tuple(Check(v.invariant, v.message) for v in found), checker.last_sometimes,
                hooks(protocol).state_summary(world),
            )
        )  # fmt: skip
        at_step[int(r["step"])] = n
        before = world
    for lake_step, inv, msg in window_violations:
        if lake_step in at_step:
            violations.append((inv, msg, at_step[lake_step]))
            steps[at_step[lake_step] - 1].violated += (Check(inv, msg),)
    violated = tuple(sorted({i for i, _, _ in violations}))
    violations.sort(key=lambda v: (v[2], v[0]))
    return Trace(head, steps, "FAILED" if violated else "PASSED", violated, tuple(violations))


def _ops(cell: Any, where: str) -> list[dict[str, Any]]:
    """A row's `ops` cell: a non-empty JSON list of step actions within the trace format's bounds."""
    try:
        ops = strict.json_value(str(cell))
        if not isinstance(ops, list) or not ops:
            raise strict.Malformed("not a non-empty JSON list")
        for op in ops:
            if not isinstance(op, dict) or not isinstance(op.get("op"), str):
                raise strict.Malformed("an entry is not an action with a string 'op'")
            trace_limits.check_action(op)
    except strict.Malformed as exc:
        raise UsageError(exc.at(f"{where}: ops")) from None
    return ops


def write_counterexample(trace: Trace, directory: Path, invariant: str | None = None) -> Path:
    """`<directory>/<invariant-id>_<fingerprint>.ndjson` (the project's naming), named after
    `invariant` (the violation the file was written for) when given."""
    path = counterexample_path(trace, directory)
    if invariant is not None:
        path = directory / f"{invariant}_{trace.fingerprint()}.ndjson"
    return write_trace(trace, path)

"""Known deviations of Apache Kafka (model.deviations, docs/known-deviations.md): a promise the model
breaks as Kafka does is reported, not failed, and only when the tagged step explains all of it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from conformance.engine.checker import Checker
from conformance.formats.trace_file import read_trace
from conformance.trace.replay import replay
from model.classic.progress_invariants import eventual_convergence as classic_convergence
from model.consumer.progress_invariants import eventual_convergence as consumer_convergence
from model.consumer.progress_invariants import no_double_client_assignment
from model.deviations import explain, load_all
from model.errors import ErrorCode

FINDINGS = Path(__file__).resolve().parents[1] / "reports" / "findings"
CLASSIC = FINDINGS / "classic.eventual_convergence_e91431a45c0a.ndjson"
CONSUMER = FINDINGS / "consumer.eventual_convergence_7ace519098b6.ndjson"
OWNERSHIP = FINDINGS / "consumer.no_double_client_assignment_918737a10d27.ndjson"
REMOVED_SYNC = FINDINGS / "classic.parked_requests_answered_f0e6f38682ed.ndjson"
#: thorough classic seed 2: a failover takes the group back to a generation computed on fewer
#: partitions than the returning static leader's last, unsent assignment (`ClassicSim.computed`)
AFTER_FAILOVER = (
    Path(__file__).resolve().parent / "deviation_traces" / "classic.eventual_convergence_b5751eb00bc0.ndjson"
)


def _last_violation(path: Path, predicate):  # type: ignore[no-untyped-def]
    result = replay(read_trace(path))
    assert result.exact and result.verdict == "KNOWN DEVIATION", (result.verdict, result.difference)
    hits = [o for o in result.observations if list(predicate(o))]
    assert hits, "the promise is broken in the replay"
    return result, hits[-1]


def test_every_deviation_names_its_promise_and_a_finding_that_exists() -> None:
    from model.invariants import load_all as invariants

    registry = invariants()
    for dev in load_all().values():
        assert dev.invariant in registry and registry[dev.invariant].kind in ("liveness", "transition"), (
            dev.id
        )
        assert all(other in registry for other in dev.also), dev.also
        assert (FINDINGS.parent.parent / dev.finding).exists(), dev.finding
        assert dev.sources and dev.title, dev.id


def test_the_static_leader_snapshot_is_a_known_deviation() -> None:
    result, obs = _last_violation(CLASSIC, classic_convergence)
    assert result.deviations == ["kip-814-leader-snapshot"]
    assert ("kip-814-leader-snapshot", "c1") in obs.after.deviations
    dev = explain("classic.eventual_convergence", obs)
    assert dev is not None and dev.id == "kip-814-leader-snapshot"
    strict = Checker("classic", strict=True)
    assert any(v.invariant == "classic.eventual_convergence" for v in strict.check(obs, 1))
    assert not Checker("classic").check(obs, 1)


def test_the_snapshot_does_not_explain_a_partition_it_knew_of() -> None:
    _, obs = _last_violation(CLASSIC, classic_convergence)
    world = obs.after
    known = dict(world.assignment_topics or ())
    owner = next(c for c in world.clients if any(p < known.get(t, 0) for t, p in c.owned))
    dropped = replace(owner, owned=frozenset(tp for tp in owner.owned if tp[1] >= known.get(tp[0], 0)))
    broken = replace(
        obs, after=replace(world, clients=tuple(dropped if c is owner else c for c in world.clients))
    )
    assert list(classic_convergence(broken))
    assert explain("classic.eventual_convergence", broken) is None
    untagged = replace(obs, after=replace(world, deviations=frozenset()))
    assert explain("classic.eventual_convergence", untagged) is None


def test_the_stale_heartbeat_copy_is_a_known_deviation() -> None:
    result, obs = _last_violation(CONSUMER, consumer_convergence)
    assert result.deviations == ["stale-heartbeat-copy"]
    dev = explain("consumer.eventual_convergence", obs)
    assert dev is not None and dev.id == "stale-heartbeat-copy"
    strict = Checker("consumer", strict=True)
    assert any(v.invariant == "consumer.eventual_convergence" for v in strict.check(obs, 1))


def test_the_stale_copy_does_not_explain_an_untagged_client() -> None:
    _, obs = _last_violation(CONSUMER, consumer_convergence)
    world = obs.after
    tagged = {s for _, s in world.deviations}
    other = next(c for c in world.clients if c.active and c.name not in tagged and c.owned)
    short = replace(other, owned=frozenset(sorted(other.owned)[1:]))
    broken = replace(
        obs, after=replace(world, clients=tuple(short if c is other else c for c in world.clients))
    )
    assert explain("consumer.eventual_convergence", broken) is None


def test_a_run_lists_its_known_deviations_and_passes(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from conformance.engine.checker import Deviation
    from conformance.engine.run import CheckResult
    from conformance.reporting.deviations import deviation_lines
    from conformance.reporting.run_report import write_check_report

    result = CheckResult("classic", "model", 0, 1, {})
    result.deviations = [
        Deviation("kip-814-leader-snapshot", "classic.eventual_convergence", 3, 7, "t-1 owned by nobody")
    ]
    assert result.verdict == "PASSED"
    lines = deviation_lines(result)
    assert "kip-814-leader-snapshot breaks classic.eventual_convergence" in lines[0]
    assert "3 observation(s); first: t-1 owned by nobody" in lines[1]
    out = write_check_report(result, tmp_path)
    summary = (out / "summary.md").read_text()
    assert "## Known deviations of Apache Kafka" in summary
    assert "| `classic.eventual_convergence` | liveness | KNOWN DEVIATION |" in summary
    data = json.loads((out / "results.json").read_text())
    assert [d["id"] for d in data["known_deviations"]] == ["kip-814-leader-snapshot"]


def _returning_leader(join_version: int):  # type: ignore[no-untyped-def]
    """Two members on t(1), c1 static and leading; t grows, c1's process restarts before it rejoins,
    then perturbations stop: the group settles without t-1 (docs/known-deviations.md)."""
    from conformance.protocols.build import make_classic_sim

    clients = [
        {"name": "c1", "instance_id": "i1", "join_version": join_version, "session_timeout_ms": 6000},
        {"name": "c2", "join_version": 0, "session_timeout_ms": 6000},
    ]
    sim = make_classic_sim({"t": 1}, clients, {}, {})
    seen: list = []
    sim.converge(seen.append)
    assert sim.world.group is not None and sim.world.group.leader == sim.clients["c1"].member_id
    sim.grow_topic("t", 2)
    sim.restart("c1")
    sim.converge(seen.append)
    return sim, seen


def test_a_returning_static_leader_misses_the_growth_at_every_join_version() -> None:
    for version, dev_id in ((9, "kip-814-leader-snapshot"), (5, "static-leader-unaware")):
        sim, seen = _returning_leader(version)
        broken = [o for o in seen if list(classic_convergence(o))]
        assert broken, version
        assert all(explain("classic.eventual_convergence", o).id == dev_id for o in broken), version  # type: ignore[union-attr]
        assert {d for d, _ in broken[-1].after.deviations} == {dev_id}
        assert not any(("t", 1) in c.owned for c in broken[-1].after.clients)


def test_no_op_replays_after_a_converge_a_violation_cut_short(tmp_path: Path) -> None:
    """A violation inside ``converge`` ends the example, so a trace with an op after a cut-short
    converge is no run's trace; replay refuses it (and so the minimiser never keeps one)."""
    import dataclasses

    from conformance.formats.trace_file import write_trace
    from conformance.protocols.build import make_classic_sim
    from conformance.protocols.classic.kit import to_trace

    sim = make_classic_sim({"t": 1}, [{"name": "c1"}, {"name": "c2"}], {}, {})
    seen: list = []
    sim.converge(seen.append)
    sim.grow_topic("t", 2)
    trace = to_trace(sim, target="model", target_version="test", origin={"kind": "test"}, violations=[])
    assert replay(read_trace(write_trace(trace, tmp_path / "whole.ndjson"))).verdict == "PASSED"
    first = trace.steps[0]
    cut = dataclasses.replace(first, action={"op": "converge", "observations": len(seen)})
    bad = dataclasses.replace(trace, steps=[cut, *trace.steps[1:]])
    result = replay(read_trace(write_trace(bad, tmp_path / "cut.ndjson")))
    assert result.verdict == "ERROR" and "after a converge cut short" in (result.error or "")


def test_a_v9_answer_naming_another_leader_is_not_a_known_deviation() -> None:
    """Below v9 Kafka names the previous leader id; at v9 it answers SkipAssignment. A coordinator
    that answers a v9 join the old way is not explained by `static-leader-unaware`."""
    from types import SimpleNamespace

    from model.classic.deviations import UNAWARE_LEADER, returning_leader
    from model.classic.messages import JoinGroupResponse

    answer = JoinGroupResponse(ErrorCode.NONE, 2, "consumer", "range", leader="old", member_id="new")
    for version, tagged_ in ((5, True), (9, False)):
        tags: set[tuple[str, str]] = set()
        group = SimpleNamespace(leader="new")
        returning_leader(tags, "c1", answer, group, (("t", 1),), (("t", 2),), version)  # type: ignore[arg-type]
        assert ((UNAWARE_LEADER, "c1") in tags) is tagged_, version


def test_a_stale_copy_can_leave_two_clients_owning_a_partition() -> None:
    """Thorough consumer, seed 2: a late copy of a join, after the group was deleted and created
    again, takes the answer that told the member to hold nothing; the client, at an epoch number the
    new group reached too, keeps its partition and is never told (reports/thorough-model.md)."""
    result, obs = _last_violation(OWNERSHIP, no_double_client_assignment)
    assert result.deviations == ["stale-heartbeat-copy"]
    for promise in ("consumer.no_double_client_assignment", "consumer.valid_member_epoch"):
        dev = explain(promise, obs)
        assert dev is not None and dev.id == "stale-heartbeat-copy", promise
    strict = {v.invariant for v in Checker("consumer", strict=True).check(obs, 1)}
    assert {"consumer.no_double_client_assignment", "consumer.valid_member_epoch"} <= strict
    untagged = replace(obs, after=replace(obs.after, deviations=frozenset()))
    assert explain("consumer.no_double_client_assignment", untagged) is None


def test_a_removed_members_unanswered_sync_is_a_known_deviation() -> None:
    from model.classic.response_invariants import parked_requests_answered

    result, obs = _last_violation(REMOVED_SYNC, parked_requests_answered)
    assert result.deviations == ["removed-member-sync-unanswered"]
    dev = explain("classic.parked_requests_answered", obs)
    assert dev is not None and dev.id == "removed-member-sync-unanswered"
    strict = Checker("classic", strict=True)
    assert any(v.invariant == "classic.parked_requests_answered" for v in strict.check(obs, 1))
    # the tag covers the removed member only: another member's dropped SyncGroup still fails
    other = replace(
        obs, after=replace(obs.after, deviations=frozenset({("removed-member-sync-unanswered", "x")}))
    )
    assert explain("classic.parked_requests_answered", other) is None


def test_a_returning_static_leader_after_a_failover_is_judged_on_the_loaded_assignment() -> None:
    result, obs = _last_violation(AFTER_FAILOVER, classic_convergence)
    assert result.deviations == ["static-leader-unaware"]
    assert not Checker("classic").check(obs, 1)

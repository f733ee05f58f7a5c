"""The held-out bug catalogue (specs/bugs-heldout.yaml): its split is the fixed-seed one, every entry
has its mutant, and every classic mutant changes what the model answers or records on a short
scripted request sequence (KIP-848 and mixed ones: tests/test_heldout_mutants_848.py)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conformance.mutants import MUTANTS, get_mutant, heldout_mutants
from conformance.mutants import heldout_classic as hc
from conformance.power.heldout_power import WAVE_SEEDS, expected_halves, load_bugs, split_halves
from conformance.power.heldout_report import render_catalogue, render_seeds
from conformance.targets.mutant import check_setup
from model.classic.client import ClassicClient, Phase
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.classic.records import OffsetCommitRecord
from model.classic.state import GroupState
from model.errors import ErrorCode as E
from tests.classic_script import Script, join, stable_client


def test_split_is_the_fixed_seed_shuffle_of_the_sorted_ids() -> None:
    bugs = load_bugs()
    ids = sorted(b["id"] for b in bugs if b["wave"] == 1)
    random.Random(20261126).shuffle(ids)
    dev = set(ids[: len(ids) // 2])
    assert len(ids) == 24 and len({b["id"] for b in bugs}) == len(bugs)
    assert {b["id"]: b["half"] for b in bugs if b["wave"] == 1} == {
        i: "dev" if i in dev else "heldout" for i in ids
    }
    assert {b["id"]: b["half"] for b in bugs} == expected_halves(bugs)


def test_a_later_wave_is_split_among_itself_and_moves_no_earlier_entry() -> None:
    first = split_halves([f"HB-{n:02d}" for n in range(1, 25)], WAVE_SEEDS[1])
    second = split_halves([f"HB-{n:02d}" for n in range(25, 45)], WAVE_SEEDS[2])
    assert list(first.values()).count("dev") == 12 and list(second.values()).count("dev") == 10
    bugs = [{"id": i, "wave": 1} for i in first] + [{"id": i, "wave": 2} for i in second]
    assert expected_halves(bugs) == {**first, **second}
    assert split_halves(list(second), WAVE_SEEDS[2]) == second  # the order given does not matter


def test_an_entry_of_an_unknown_wave_is_refused_with_its_position(tmp_path: Any) -> None:
    spec = tmp_path / "bugs.yaml"
    spec.write_text("bugs:\n  - {id: HB-01, mutant: m, protocol: classic, half: dev, wave: 9}\n")
    with pytest.raises(ValueError, match=r"bugs\[0\]\.wave"):
        load_bugs(spec)


def test_every_entry_has_its_mutant_and_no_mutant_is_in_the_first_catalogue() -> None:
    bugs = load_bugs()
    assert {b["mutant"] for b in bugs} == set(heldout_mutants())
    for bug in bugs:
        mutant = get_mutant(bug["mutant"], bug["protocol"])
        assert mutant.family == "heldout" and mutant.name not in MUTANTS
        assert bug["layer"] in ("coordinator", "client assignor", "client")
        assert bug["faulty"] and bug["fixed"] and all(s["url"].startswith("https://") for s in bug["sources"])
        assert (bug["layer"] == "client") == (mutant.client is not None)


def test_mixed_mutant_target_selects_the_mixed_mutant_variant() -> None:
    variants, protocols = check_setup("mutant:kafka-17228", {}, "all")
    assert protocols == ["mixed"] and variants["mixed_mutant"] == "kafka-17228"


# ---------------------------------------------------------------------------------- coordinator


def formed(s: Script, version: int = 3, **kw: Any) -> str:
    """One member joins an empty group and the initial delay completes its join phase."""
    ref = s.send(join(version=version, **kw), 0)
    s.advance(3_000)
    return s.answers[ref].member_id


def leader_synced(s: Script, **kw: Any) -> str:
    mid = formed(s, **kw)
    s.send(
        SyncGroupRequest("g", 1, mid, ((mid, b""),), kw.get("group_instance_id"), "consumer", "range"), 3_000
    )
    assert s.group.state == GroupState.STABLE
    return mid


def sync_deadline(s: Script) -> Any:
    formed(s)
    return s.group.state, "sync" in s.group.timers


def v0_join_deadline(s: Script) -> Any:
    """A v0 group: the sync deadline and the next join deadline follow the rebalance timeout."""
    formed(s, version=0)
    s.send(join(version=0), 3_000)
    join_timer = s.group.timers.get("join")
    return len(s.group.members), None if join_timer is None else join_timer.deadline


def parked_new_member_after_timeout(s: Script) -> Any:
    formed(s, session_timeout_ms=1_000_000, rebalance_timeout_ms=1_000_000)
    s.send(join(client_id="c2"), 3_000)
    s.advance(3_000 + 300_001)
    return len(s.group.members)


def heartbeating_v3_member(s: Script) -> Any:
    mid = leader_synced(s)
    for now in range(5_000, 320_000, 5_000):
        s.advance(now)
        s.send(HeartbeatRequest("g", 1, mid), now)
    return sorted(s.group.members)


def replaced_static_timeouts(s: Script) -> Any:
    formed(s, version=5, group_instance_id="i1", session_timeout_ms=10_000, rebalance_timeout_ms=30_000)
    s.send(
        join(version=5, group_instance_id="i1", session_timeout_ms=20_000, rebalance_timeout_ms=40_000), 4_000
    )
    member = next(iter(s.group.members.values()))
    return member.session_timeout_ms, member.rebalance_timeout_ms


def static_leader_rejoin(s: Script) -> Any:
    leader_synced(s, version=9, group_instance_id="i1")
    ref = s.send(join(version=9, group_instance_id="i1"), 4_000)
    resp = s.answers[ref]
    return len(resp.members), resp.skip_assignment


def pending_member_over_max_size(s: Script) -> Any:
    p1 = s.answers[s.send(join(version=9, client_id="c1"), 0)].member_id
    p2 = s.answers[s.send(join(version=9, client_id="c2"), 0)].member_id
    s.send(join(p1, version=9), 1)
    ref = s.send(join(p2, version=9), 2)
    return s.answers.get(ref, "parked"), len(s.group.members)


def commit_in_completing_rebalance(s: Script) -> Any:
    mid = formed(s)
    ref = s.send(OffsetCommitRequest("g", 1, mid, (OffsetCommitPartition("t", 0, 7),)), 3_000)
    return s.answers[ref].partitions, any(isinstance(r, OffsetCommitRecord) for r in s.records)


def late_joiner(s: Script) -> Any:
    formed(s)
    ref = s.send(join(client_id="c2"), 3_000)
    answer = s.answers.get(ref)
    return s.group.state, None if answer is None else (answer.error, answer.generation_id)


def static_member_not_rejoined(s: Script) -> Any:
    leader_synced(
        s, version=5, group_instance_id="i1", session_timeout_ms=100_000, rebalance_timeout_ms=20_000
    )
    s.send(join(client_id="c2"), 4_000)
    s.advance(4_000 + 20_001)
    return sorted(m.instance_id or "dynamic" for m in s.group.members.values())


COORDINATOR_CASES: dict[str, tuple[Callable[[Script], Any], dict[str, Any]]] = {
    "kafka-12890": (sync_deadline, {}),
    "kafka-8653": (v0_join_deadline, {}),
    "kafka-7610": (parked_new_member_after_timeout, {}),
    "kafka-9232": (heartbeating_v3_member, {}),
    "kafka-14009": (replaced_static_timeouts, {}),
    "kafka-13435": (static_leader_rejoin, {}),
    "kafka-9885": (pending_member_over_max_size, {"max_size": 1}),
    "kafka-8487": (commit_in_completing_rebalance, {}),
    "seaweedfs-9162": (late_joiner, {}),
    "kafka-8220": (static_member_not_rejoined, {}),
}


@pytest.mark.parametrize("name", sorted(COORDINATOR_CASES))
def test_classic_coordinator_mutant_answers_differently(name: str) -> None:
    script, config = COORDINATOR_CASES[name]
    mutant = get_mutant(name, "classic").coordinator
    assert mutant is not None and issubclass(mutant, ClassicCoordinator) and mutant.__doc__
    fixed, broken = script(Script(ClassicCoordinator, **config)), script(Script(mutant, **config))
    assert fixed != broken, (fixed, broken)


def test_coordinator_scripts_show_the_fixed_rule() -> None:
    """The model side of each script is Kafka's fixed behaviour (so the difference is the bug)."""
    assert sync_deadline(Script(ClassicCoordinator)) == (GroupState.COMPLETING_REBALANCE, True)
    assert v0_join_deadline(Script(ClassicCoordinator)) == (2, 3_000 + 10_000)
    assert parked_new_member_after_timeout(Script(ClassicCoordinator)) == 1
    assert len(heartbeating_v3_member(Script(ClassicCoordinator))) == 1
    assert replaced_static_timeouts(Script(ClassicCoordinator)) == (20_000, 40_000)
    assert static_leader_rejoin(Script(ClassicCoordinator)) == (1, True)
    assert (
        pending_member_over_max_size(Script(ClassicCoordinator, max_size=1))[0].error
        == E.GROUP_MAX_SIZE_REACHED
    )
    assert {e for _, _, e in commit_in_completing_rebalance(Script(ClassicCoordinator))[0]} == {
        E.REBALANCE_IN_PROGRESS
    }
    assert late_joiner(Script(ClassicCoordinator)) == (GroupState.PREPARING_REBALANCE, None)
    assert static_member_not_rejoined(Script(ClassicCoordinator)) == ["dynamic", "i1"]


# ---------------------------------------------------------------------------------- clients


def heartbeat_illegal_generation(cls: type[ClassicClient]) -> Any:
    c = stable_client(cls)
    assert isinstance(c.next_request({"t": 2}), HeartbeatRequest)
    c.on_response(HeartbeatResponse(E.ILLEGAL_GENERATION), {"t": 2})
    return c.member_id, c.generation


def sync_rebalance_in_progress(cls: type[ClassicClient]) -> Any:
    c = stable_client(cls, cooperative=True)
    c.phase, c.inflight = Phase.SYNCING, "sync"
    c.on_response(SyncGroupResponse(E.REBALANCE_IN_PROGRESS), {"t": 2})
    return c.generation, c.owned


def commit_rebalance_in_progress(cls: type[ClassicClient]) -> Any:
    c = stable_client(cls, cooperative=True)
    assert c.commit_request(5) is not None
    c.on_response(OffsetCommitResponse((("t", 0, E.REBALANCE_IN_PROGRESS),)), {"t": 2})
    return c.generation, c.owned


def join_unknown_member(cls: type[ClassicClient]) -> Any:
    c = stable_client(cls, cooperative=True)
    c.needs_rejoin = True
    assert isinstance(c.next_request({"t": 2}), JoinGroupRequest)
    c.on_response(JoinGroupResponse(E.UNKNOWN_MEMBER_ID), {"t": 2})
    return c.member_id, c.owned


CLIENT_CASES: dict[str, Callable[[type[ClassicClient]], Any]] = {
    "kafka-13419": heartbeat_illegal_generation,
    "kafka-14016": sync_rebalance_in_progress,
    "kafka-python-2614": commit_rebalance_in_progress,
    "kafka-12983": join_unknown_member,
}


@pytest.mark.parametrize("name", sorted(CLIENT_CASES))
def test_classic_client_mutant_behaves_differently(name: str) -> None:
    mutant = get_mutant(name, "classic").client
    assert mutant is not None and issubclass(mutant, ClassicClient) and mutant.__doc__
    fixed, broken = CLIENT_CASES[name](ClassicClient), CLIENT_CASES[name](mutant)
    assert fixed != broken, (fixed, broken)


def test_every_classic_heldout_mutant_has_a_script() -> None:
    names = {m.name for m in hc.HELDOUT_CLASSIC_MUTANTS}
    assert names == set(COORDINATOR_CASES) | set(CLIENT_CASES)


def test_catalogue_document_is_generated_from_the_spec() -> None:
    doc = Path("docs") / "bug-catalogue-heldout.md"
    assert doc.read_text() == render_catalogue(load_bugs()) + "\n"


def test_seed_table_counts_an_entry_caught_at_any_seed_once() -> None:
    bugs = [
        {"id": "HB-90", "mutant": "a", "protocol": "classic", "half": "heldout"},
        {"id": "HB-91", "mutant": "b", "protocol": "classic", "half": "heldout"},
        {"id": "HB-92", "mutant": "c", "protocol": "consumer", "half": "dev"},
    ]
    caught = {"caught": True, "check_seconds": 2.0, "invariants": ["x.y"], "verdict": "FAILED"}
    passed = {"caught": False, "check_seconds": 9.0, "invariants": [], "verdict": "PASSED"}
    text = render_seeds(bugs, {0: {"a": caught, "b": passed}, 3: {"a": caught, "b": passed, "c": caught}})
    assert "### heldout half: caught at one seed or more: 1 of 2" in text
    assert "| HB-90 | `a` | classic | **caught** 2.0 s | **caught** 2.0 s | `x.y` |" in text
    assert "| HB-92 | `c` | consumer | not run | **caught** 2.0 s | `x.y` |" in text
    assert "Caught per seed: seed 0: 1 of 2, seed 3: 1 of 2" in text
    assert "Caught per seed: seed 0: 0 of 1, seed 3: 1 of 1" in text

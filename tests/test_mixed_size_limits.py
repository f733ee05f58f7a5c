"""The mixed machine draws group size limits (`SIZE_LIMITS`): a classic group at group.max.size
refuses a member, a classic group above group.consumer.max.size is not upgraded, and the limits
travel in a trace's set-up, where a malformed one is a spec error naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.errors import SpecError
from conformance.formats.trace_file import read_trace, write_trace
from conformance.protocols.mixed.trace import make_mixed_run, to_trace
from conformance.trace.replay import replay
from model.errors import ErrorCode


def _errors(run, name: str) -> set[int]:  # type: ignore[no-untyped-def]
    return {int(getattr(r, "error", getattr(r, "error_code", 0))) for n, r in run.responses if n == name}


def _two_classic(setup: dict[str, int]):  # type: ignore[no-untyped-def]
    run = make_mixed_run(setup, {}, "test")
    run.topic("t", 2)
    for name in ("c1", "c2"):
        run.add_classic(name, topics=("t",), assignors=("range",))
        run.run_for(5_000)
    return run


def test_a_classic_group_at_its_size_limit_refuses_a_member() -> None:
    assert ErrorCode.GROUP_MAX_SIZE_REACHED in _errors(_two_classic({"seed": 0, "classic_max_size": 1}), "c2")
    assert ErrorCode.GROUP_MAX_SIZE_REACHED not in _errors(_two_classic({"seed": 0}), "c2")


def test_a_classic_group_above_the_consumer_limit_is_not_upgraded() -> None:
    for limit, upgraded in ((1, False), (3, True)):
        run = _two_classic({"seed": 0, "consumer_max_size": limit})
        run.add_consumer("k3", topics=("t",))
        run.run_for(5_000)
        assert (run.group_type() == "consumer") is upgraded, limit
        assert (ErrorCode.GROUP_ID_NOT_FOUND in _errors(run, "k3")) is not upgraded, limit


def test_the_limits_replay_from_the_trace_set_up(tmp_path: Path) -> None:
    run = _two_classic({"seed": 0, "classic_max_size": 1, "consumer_max_size": 2})
    trace = to_trace(run, target="model", target_version="test", origin={"kind": "test"}, violations=[])
    assert trace.header["setup"]["classic_max_size"] == 1 and trace.header["setup"]["consumer_max_size"] == 2
    result = replay(read_trace(write_trace(trace, tmp_path / "limits.ndjson")))
    assert result.exact and result.verdict == "PASSED", (result.verdict, result.difference)
    assert (
        "classic_max_size"
        not in to_trace(
            _two_classic({"seed": 0}),
            target="model",
            target_version="test",
            origin={"kind": "test"},
            violations=[],
        ).header["setup"]
    )


@pytest.mark.parametrize("value", [0, -1, 1_001, "2", 2.0, True, None])
def test_a_malformed_limit_is_a_spec_error_naming_the_key(value: object) -> None:
    with pytest.raises(SpecError, match="classic_max_size"):
        make_mixed_run({"seed": 0, "classic_max_size": value}, {}, "trace.ndjson:1")


def test_the_machine_sets_the_limits_its_seed_chooses() -> None:
    from conformance.engine.machine import MachineSettings
    from conformance.protocols.mixed.machine import SIZE_LIMITS, make_machine

    seen = set()
    for seed in range(len(SIZE_LIMITS)):
        machine = make_machine(MachineSettings({}))()
        machine.setup(policy="bidirectional", assignor="range", partitions=2, first=[True, True], seed=seed)
        setup = machine.run.setup
        seen.add((setup.get("classic_max_size", 0), setup.get("consumer_max_size", 0)))
    assert seen == set(SIZE_LIMITS)

"""Coverage top-up: more examples on derived seeds only while a `sometimes` goal is unmet."""

from __future__ import annotations

import pytest

import conformance.protocols  # noqa: F401  (installs the kits)
from conformance.engine.profiles import Profile
from conformance.engine.run import run_check, top_up_seed


def test_an_unmet_goal_runs_more_rounds_and_a_met_one_does_not() -> None:
    # seed 2: two examples leave goals unmet (at seed 0 a `converge` meets them all at once); with
    # the stray-request rules drawn too, the goals take five rounds to meet here
    tiny = run_check("classic", profile=Profile("small", 2, 15), seed_value=2)
    assert tiny.vacuous, "two short examples leave some goal unmet"
    assert tiny.top_up_rounds == 0
    topped = run_check("classic", profile=Profile("small", 2, 15, top_up=6), seed_value=2)
    assert topped.top_up_rounds >= 1
    assert topped.vacuous == [] and topped.verdict == "PASSED"
    assert all(topped.sometimes[k] >= n for k, n in tiny.sometimes.items())
    again = run_check("classic", profile=Profile("small", 2, 15, top_up=6), seed_value=2)
    assert (again.top_up_rounds, again.sometimes) == (topped.top_up_rounds, topped.sometimes)


def test_no_top_up_once_every_goal_is_met() -> None:
    base = run_check("classic", profile=Profile("enough", 5, 25), seed_value=0)
    assert not base.vacuous, "the base run meets every goal"
    full = run_check("classic", profile=Profile("enough", 5, 25, top_up=2), seed_value=0)
    assert full.top_up_rounds == 0
    assert full.sometimes == base.sometimes
    assert len({7, top_up_seed(7, 1), top_up_seed(7, 2)}) == 3


def test_a_run_restarts_when_the_target_answers_a_replayed_prefix_otherwise(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from hypothesis.errors import FlakyStrategyDefinition

    from conformance.engine import run as run_module

    calls: list[int] = []
    real = run_module.get_state_machine_test

    def flaky_once(machine, settings):  # type: ignore[no-untyped-def]
        test = real(machine, settings=settings)

        def first_round_is_flaky() -> None:
            calls.append(1)
            if len(calls) == 1:
                raise FlakyStrategyDefinition("the target answered a replayed prefix otherwise")
            test()

        return first_round_is_flaky

    monkeypatch.setattr(run_module, "get_state_machine_test", flaky_once)
    # a real target's runs may restart (`MAX_RESTARTS`); here the model run is allowed one
    result = run_check("classic", profile=Profile("enough", 5, 25), seed_value=0, restarts=1)
    assert result.restarts == 1 and len(calls) == 2
    assert result.error is None and result.verdict in ("PASSED", "INCONCLUSIVE")
    calls.clear()
    with pytest.raises(FlakyStrategyDefinition):  # without a restart allowed it is a tool error
        run_check("classic", profile=Profile("enough", 5, 25), seed_value=0)

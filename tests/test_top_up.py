"""Coverage top-up: more examples on derived seeds only while a `sometimes` goal is unmet."""

from __future__ import annotations

import conformance.protocols  # noqa: F401  (installs the kits)
from conformance.engine.profiles import Profile
from conformance.engine.run import run_check, top_up_seed


def test_an_unmet_goal_runs_more_rounds_and_a_met_one_does_not() -> None:
    tiny = run_check("classic", profile=Profile("small", 2, 15), seed_value=0)
    assert tiny.vacuous, "two short examples leave some goal unmet"
    assert tiny.top_up_rounds == 0
    topped = run_check("classic", profile=Profile("small", 2, 15, top_up=3), seed_value=0)
    assert topped.top_up_rounds >= 1
    assert topped.vacuous == [] and topped.verdict == "PASSED"
    assert all(topped.sometimes[k] >= n for k, n in tiny.sometimes.items())
    again = run_check("classic", profile=Profile("small", 2, 15, top_up=3), seed_value=0)
    assert (again.top_up_rounds, again.sometimes) == (topped.top_up_rounds, topped.sometimes)


def test_no_top_up_once_every_goal_is_met() -> None:
    base = run_check("classic", profile=Profile("enough", 3, 20), seed_value=0)
    assert not base.vacuous, "the base run meets every goal"
    full = run_check("classic", profile=Profile("enough", 3, 20, top_up=2), seed_value=0)
    assert full.top_up_rounds == 0
    assert full.sometimes == base.sometimes
    assert len({7, top_up_seed(7, 1), top_up_seed(7, 2)}) == 3

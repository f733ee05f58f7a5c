"""The CLI contract: exit codes 0 / 1 / 2 and what each verb prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import specs
from conformance.cli.main import main


def test_kafka_7026_v0_exits_1_naming_single_owner(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert (
        main(["scenario", "run", "kafka-7026", "--variant", "sticky=v0", "--report-dir", str(tmp_path)]) == 1
    )
    out = capsys.readouterr().out
    assert "single_owner" in out
    assert "kafka-7026.yaml" in out  # the steps are printed with their spec lines


def test_kafka_7026_v1_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "run", "kafka-7026", "--variant", "sticky=v1"]) == 0
    assert "PASSED" in capsys.readouterr().out


def test_unknown_scenario_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "run", "no-such-scenario"]) == 2
    assert "unknown scenario 'no-such-scenario'" in capsys.readouterr().err


@pytest.mark.parametrize("variant", ["sticky=v7", "nonsense=1", "sticky"])
def test_bad_variant_exits_2(variant: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "run", "kafka-7026", "--variant", variant]) == 2
    assert "variant" in capsys.readouterr().err


def test_unknown_target_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--target", "nowhere", "--max-examples", "1"]) == 2
    assert "unknown target" in capsys.readouterr().err


def test_unresolvable_host_port_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--target", "nowhere.invalid:1", "--max-examples", "1"]) == 2
    err = capsys.readouterr().err
    assert "nowhere.invalid:1" in err and err.count("\n") == 1


def test_scenario_list_and_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "list"]) == 0
    assert "kafka-7026" in capsys.readouterr().out
    assert main(["explain", "classic.single_owner_consumer"]) == 0
    out = capsys.readouterr().out
    assert "KAFKA-7026" in out and "statement:" in out
    assert main(["explain", "classic.nope"]) == 2


def test_specs_validate_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["specs", "validate"]) == 0
    assert "specs valid" in capsys.readouterr().out


def _catalogue_with(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "invariants.yaml"
    path.write_text(text)
    return path


def test_bad_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = _catalogue_with(tmp_path, "version: 1\ninvariants:\n  - id: x\n    kind: [unclosed\n")
    with pytest.raises(specs.SpecError, match=r"invariants.yaml:\d+: invalid YAML"):
        specs.load_invariants(path)


def test_missing_field_names_line(tmp_path: Path) -> None:
    good = specs.SPECS_DIR.joinpath("invariants.yaml").read_text()
    broken = good.replace("    statement: A rebalance reaches Stable.\n", "", 1)
    path = _catalogue_with(tmp_path, broken)
    with pytest.raises(
        specs.SpecError,
        match=r"invariants.yaml:\d+: invariant 'classic.sometimes_rebalance_completed' lacks field 'statement'",
    ):
        specs.load_invariants(path)


def test_catalogue_must_match_code(tmp_path: Path) -> None:
    good = specs.SPECS_DIR.joinpath("invariants.yaml").read_text()
    path = _catalogue_with(tmp_path, good.replace("id: classic.max_size", "id: classic.max_sizes", 1))
    with pytest.raises(specs.SpecError, match="classic.max_sizes' has no implementation"):
        specs.load_invariants(path)
    path = _catalogue_with(
        tmp_path,
        good.replace(
            "kind: safety\n    nature: promise\n    protocol: classic\n    statement: A non-empty",
            "kind: liveness\n    nature: promise\n    protocol: classic\n    statement: A non-empty",
            1,
        ),
    )
    with pytest.raises(
        specs.SpecError, match="leader_is_member' is liveness/classic here but safety/classic"
    ):
        specs.load_invariants(path)


def test_bad_scenario_file_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scen = tmp_path / "scenarios"
    scen.mkdir()
    (scen / "broken.yaml").write_text(
        "id: broken\ntitle: x\nsource: y\nprotocol: classic\nsteps:\n  - settle: [a]\n    advance: 3\n"
    )
    (tmp_path / "invariants.yaml").write_text(specs.SPECS_DIR.joinpath("invariants.yaml").read_text())
    monkeypatch.setattr(specs, "SPECS_DIR", tmp_path)
    assert main(["scenario", "list"]) == 2
    assert "broken.yaml:6: steps[0]: each step is a mapping with exactly one verb" in capsys.readouterr().err


def test_check_writes_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "check",
            "--target",
            "model",
            "--protocol",
            "classic",
            "--max-examples",
            "40",
            "--report-dir",
            str(tmp_path),
        ]
    )
    assert code in (0, 3)
    summary = (tmp_path / "classic" / "summary.md").read_text()
    assert "classic.single_owner_consumer" in summary
    assert (tmp_path / "classic" / "junit.xml").read_text().startswith("<?xml")

"""The CLI explains itself: every option has help, accepted values come from the registries, exit
codes are in the epilog, and `groupcheck` alone, `--version` and `explain --list` answer."""

from __future__ import annotations

import pytest

from conformance.cli.help import missing_help
from conformance.cli.main import build_parser, main
from conformance.engine.profiles import PROFILES
from conformance.engine.variants import variant_keys
from conformance.protocols import KITS
from conformance.specs import load_invariants
from conformance.targets import TARGETS


def test_every_option_of_every_command_has_help() -> None:
    assert missing_help(build_parser()) == []


def test_check_help_lists_targets_protocols_profiles_and_variants(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for name in (*TARGETS, "mutant:NAME", "host:port", "classic", "consumer", "mixed", "all"):
        assert name in out, name
    for profile in PROFILES:
        assert f"{profile} (" in out, profile
    assert "wire faults" in out
    for key in variant_keys(KITS.values()).values():
        if key.name != "mutant":
            assert f"{key.name}={' | '.join(key.values)}" in out, key.name
    assert "exit codes:" in out and "3 inconclusive" in out


def test_bare_groupcheck_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: groupcheck") and "exit codes:" in out and "explain" in out


def test_version_and_subcommand_help_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("groupcheck ")
    assert main(["show", "--help"]) == 0
    assert "exit codes:" in capsys.readouterr().out


def test_explain_list_names_every_invariant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--list"]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert listed == set(load_invariants())

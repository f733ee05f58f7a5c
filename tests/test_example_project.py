"""examples/broker-ci, the project a broker team copies into its CI, run as that team would: the
suite's items pass on the model, a mutant fails exactly the items of its fault (in the JUnit file),
and pytest's own options (-k, -x, --junitxml, --hypothesis-*) act on the suite's items."""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.mutants import get_mutant
from conformance.specs import load_invariants

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "broker-ci"


def _run(
    tmp_path: Path, *args: str, timeout: float = 900
) -> tuple[subprocess.CompletedProcess[str], ET.Element]:
    project = tmp_path / "broker-ci"
    if not project.exists():
        shutil.copytree(EXAMPLE, project)
    junit = tmp_path / f"junit-{len(list(tmp_path.glob('junit-*.xml')))}.xml"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--junitxml", str(junit), *args]
    out = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=timeout)
    return out, ET.parse(junit).getroot()


def _cases(root: ET.Element, status: str) -> set[tuple[str, str]]:
    out = set()
    for case in root.iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None
        state = "failed" if failed else "skipped" if skipped else "passed"
        if state == status:
            out.add((case.get("classname") or "", case.get("name") or ""))
    return out


@pytest.mark.slow
def test_every_item_passes_on_the_model(tmp_path: Path) -> None:
    out, root = _run(tmp_path, "--groupcheck-target", "model")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    passed = _cases(root, "passed")
    assert ("groupcheck.classic", "check") in passed and ("groupcheck.mixed", "check") in passed
    assert ("groupcheck.consumer", "consumer.no_ghost_member") in passed
    assert ("groupcheck.scenarios", "kafka-7026") in passed
    assert ("tests.test_our_coordinator", "test_a_new_member_is_asked_for_its_member_id") in passed
    assert not _cases(root, "failed")
    # a skip is only ever a `sometimes` behaviour the dev profile's runs did not reach (inconclusive)
    sometimes = {i for i, spec in load_invariants().items() if spec.kind == "sometimes"}
    for case in root.iter("testcase"):
        skipped = case.find("skipped")
        if skipped is not None:
            assert case.get("name") in sometimes, case.get("name")
            assert "inconclusive" in (skipped.get("message") or ""), skipped.get("message")


@pytest.mark.slow
def test_a_mutant_fails_exactly_the_items_of_its_fault(tmp_path: Path) -> None:
    out, root = _run(tmp_path, "--groupcheck-target", "mutant:kafka-8500", "--groupcheck-protocol", "classic")
    assert out.returncode == 1, out.stdout[-4000:]
    failed = _cases(root, "failed")
    assert failed == {
        ("groupcheck.classic", "check"),
        ("groupcheck.classic", "classic.static_instance_unique"),
        ("groupcheck.scenarios", "kafka-8500"),
    }, failed
    assert "classic.static_instance_unique" in get_mutant("kafka-8500").expect
    case = next(c for c in root.iter("testcase") if c.get("name") == "classic.static_instance_unique")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["target"] == "mutant:kafka-8500" and props["seed"] == "0"
    assert props["replay"].startswith("groupcheck replay ") and props["replay"].endswith(
        "--target mutant:kafka-8500"
    )
    assert "classic.static_instance_unique violated on mutant:kafka-8500" in (case.findtext("failure") or "")
    replay = props["replay"].split()
    again = subprocess.run(
        [sys.executable, "-m", "conformance.cli.main", *replay[1:]],
        cwd=tmp_path / "broker-ci",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 1 and "FAILED" in again.stdout, again.stdout + again.stderr


def test_pytest_options_act_on_suite_items(tmp_path: Path) -> None:
    """-x stops at the first failing item, -k selects suite items, --hypothesis-seed and
    --hypothesis-profile (registered in the project's conftest.py) set the run's seed and size."""
    out, root = _run(
        tmp_path,
        "--groupcheck-target=mutant:kafka-8500",
        "-x",
        "-k",
        "not scenarios",
        "--hypothesis-profile",
        "smoke",
        "--hypothesis-seed",
        "7",
        "--groupcheck-profile",
        "ci",
        "--groupcheck-protocol",
        "classic",
    )
    assert out.returncode == 1, out.stdout[-3000:]
    assert "1 failed" in out.stdout and "stopping after 1 failures" in out.stdout
    run = [c for c in root.iter("testcase") if (c.get("classname") or "").startswith("groupcheck")]
    (case,) = run  # -x: nothing after the first failure
    assert (case.get("classname"), case.get("name")) == ("groupcheck.classic", "check")
    assert _cases(root, "failed") == {("groupcheck.classic", "check")}
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["seed"] == "7" and props["profile"] == "ci"
    assert "(10 examples, seed 7)" in (case.findtext("failure") or "")  # the smoke profile's count


def test_the_plugin_collects_nothing_without_a_target_and_markers_are_strict(tmp_path: Path) -> None:
    out, root = _run(tmp_path, "-m", "not groupcheck")
    assert out.returncode == 0, out.stdout[-3000:]
    names = {c.get("name") for c in root.iter("testcase")}
    assert names == {"test_a_new_member_is_asked_for_its_member_id", "test_the_target_under_test_is_named"}


def test_an_unknown_target_is_a_usage_error(tmp_path: Path) -> None:
    project = tmp_path / "broker-ci"
    shutil.copytree(EXAMPLE, project)
    for spec, words in (("no-such-broker", "unknown"), ("mutant:no-such-mutant", "unknown mutant")):
        out = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--groupcheck-target", spec],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 4, out.stdout + out.stderr  # pytest's usage error, before any run
        assert f"--groupcheck-target {spec}" in out.stderr and words in out.stderr, out.stderr


@pytest.mark.target
def test_the_suite_on_apache_kafka(tmp_path: Path) -> None:
    out, root = _run(
        tmp_path,
        "--groupcheck-target",
        "apache-kafka",
        "--groupcheck-protocol",
        "classic",
        "-k",
        "not scenarios",
        timeout=1500,
    )
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    passed = _cases(root, "passed")
    assert ("groupcheck.classic", "check") in passed
    assert ("tests.test_our_coordinator", "test_a_new_member_is_asked_for_its_member_id") in passed
    case = next(c for c in root.iter("testcase") if c.get("name") == "check")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["target"] == "apache-kafka" and props["target_version"] not in ("", "unknown")

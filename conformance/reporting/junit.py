"""`junit.xml` of a `check` run, written with xml.etree (so any text is escaped correctly).

One test suite per run; one test case per invariant of the protocol and one per request rule
(`conformance.reporting.rules`). The suite's properties carry what reproduces the run (seed,
variants, target and its version); a failing case repeats them and its system-out holds the
replay command of the counterexample.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from conformance.reporting.rules import rule_rows


def _properties(parent: ET.Element, props: dict[str, str]) -> None:
    node = ET.SubElement(parent, "properties")
    for name, value in props.items():
        ET.SubElement(node, "property", name=name, value=value)


def _version(result: Any) -> str:
    if getattr(result, "target_version", ""):
        return str(result.target_version)
    if result.target == "model" or str(result.target).startswith("mutant:"):
        from conformance.formats.trace_file import groupcheck_version

        return f"groupcheck {groupcheck_version()}"  # the target is this package's model
    return "unknown"


def run_properties(result: Any) -> dict[str, str]:
    return {
        "seed": str(result.seed),
        "variants": ",".join(f"{k}={v}" for k, v in sorted(result.variants.items())) or "none",
        "target": str(result.target),
        "target_version": _version(result),
        "max_examples": str(result.max_examples),
    }


def write_junit(result: Any, rows: list[dict[str, str]], path: Path, replay: str | None = None) -> Path:
    """``rows``: the invariant rows of the run report (id, kind, verdict)."""
    props = run_properties(result)
    suite = ET.Element("testsuite", name=f"groupcheck.{result.protocol}")
    _properties(suite, props)
    failures = 0
    for r in rows:
        case = ET.SubElement(
            suite, "testcase", classname=f"groupcheck.{result.protocol}.invariant", name=r["id"]
        )
        if r["verdict"] in ("FAILED", "NEVER SEEN"):
            failures += 1
            msgs = [v.message for v in result.violations if v.invariant == r["id"]]
            text = "; ".join(msgs) or f"{r['id']}: never exercised in this run (inconclusive)"
            ET.SubElement(case, "failure", message=text[:2000], type=r["verdict"]).text = "\n".join(msgs)
            _properties(case, props)
            if replay:
                ET.SubElement(case, "system-out").text = replay
    for rule in rule_rows(result):
        case = ET.SubElement(
            suite, "testcase", classname=f"groupcheck.{result.protocol}.rule", name=rule["rule"]
        )
        level = getattr(result, "level", "protocol")
        if rule.get(level, rule["protocol"]) == "FAILED":
            failures += 1
            ET.SubElement(case, "failure", message=f"{rule['rule']}: FAILED at level {level}", type="FAILED")
            _properties(case, props)
            if replay:
                ET.SubElement(case, "system-out").text = replay
    if replay:
        ET.SubElement(suite, "system-out").text = replay
    suite.set("tests", str(len(suite.findall("testcase"))))
    suite.set("failures", str(failures))
    suite.set("errors", "1" if getattr(result, "error", None) else "0")
    ET.indent(suite)
    path.write_bytes(ET.tostring(suite, encoding="utf-8", xml_declaration=True) + b"\n")
    return path

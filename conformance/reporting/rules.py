"""The request rules a run judges the coordinator's answers by: one JUnit test case and one report
row each (the oracle reports a divergence as ``oracle.<Api>``, kafka-compat findings as ``compat.<Api>``)."""

from __future__ import annotations

from typing import Any

from conformance.protocols import get_kit


def rule_rows(result: Any) -> list[dict[str, str]]:
    failed = {v.invariant for v in result.violations}
    compat = {f.rule for f in result.compat}
    rows = []
    for api in get_kit(result.protocol).oracle_rules:
        proto = "FAILED" if f"oracle.{api}" in failed else "PASSED"
        rows.append(
            {
                "rule": api,
                "protocol": proto,
                "kafka-compat": "FAILED" if proto == "FAILED" or f"compat.{api}" in compat else "PASSED",
            }
        )
    for extra in sorted(
        r
        for r in failed
        if not r.startswith(
            (
                "oracle.Join",
                "oracle.Sync",
                "oracle.Heart",
                "oracle.Leave",
                "oracle.Offset",
                "oracle.ConsumerGroupHeartbeat",
            )
        )
        and "." in r
        and r.split(".")[0] in ("oracle", "wire", "target")
    ):
        rows.append({"rule": extra, "protocol": "FAILED", "kafka-compat": "FAILED"})
    return rows


__all__ = ["rule_rows"]

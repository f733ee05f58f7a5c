"""What an oracle reports about a target: findings at a level, and a crash with the launcher's report.

A finding is data about the target, never an exception out of the suite. ``protocol`` findings
decide the verdict at the protocol level (a divergence no model hypothesis explains, a wire
problem, a crash); ``kafka-compat`` findings are Apache Kafka's exact choices the protocol leaves
open (docs/oracle.md#choices). Every oracle (classic, KIP-848, mixed) reports through `OracleBase`
(`conformance.engine.oracle.port`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Finding:
    """A divergence or wire problem about the target, with the level it counts at."""

    level: str  # protocol | kafka-compat
    rule: str  # e.g. oracle.JoinGroup, wire.trailing-bytes, target.crash
    message: str
    at_ms: int = 0


def crash_detail(launcher: Any) -> str:
    """ ": <the launcher's crash report>" when the target process died, else "". The process may
    need a moment to be reaped after closing its sockets: ask for 1 s."""
    if launcher is None:
        return ""
    for _ in range(20):
        try:
            launcher.check_alive()
        except Exception as e:  # noqa: BLE001 - the launcher's crash report is the finding
            return f": {e}"
        time.sleep(0.05)
    return ""


def tried(reasons: Iterable[str]) -> str:
    """How many distinct hypotheses were tried and why the first four do not explain the target."""
    uniq = list(dict.fromkeys(reasons))
    return f"({len(uniq)} tried): " + " | ".join(uniq[:4])

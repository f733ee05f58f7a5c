"""What the oracle ports of one run against one target share (docs/real-targets.md#adapter).

One `KafkaAdapter` (connections, the fault proxy), the run's naming of real groups and topics (so
runs on one coordinator never share a group), the target's launcher (restarts, crash reports),
the tolerances the oracles allow its timers (`Timing`), and counters: answer round trips, faults
injected, restarts. Opened by `conformance.targets.open`; read by every protocol's oracle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.wire.connection import KafkaAdapter


@dataclass
class Timing:
    """Tolerances around the target's timers (ms) and how long an answer may take (classic oracle)."""

    early_ms: int = 30
    late_ms: int = 500
    #: the most a timer may fire late for its arming request's answer delay (`windows.widen`)
    slack_cap_ms: int = 2000
    #: how long after its deadline a timer counts as fired when the target has not been seen
    #: running since (`windows.seen_running`: a target paused for longer is out of scope)
    unseen_cap_ms: int = 2000
    answer_deadline_ms: int = 8000
    max_hypotheses: int = 24


@dataclass
class TargetSession:
    """What the ports of one run share: the adapter, topic naming, the target's launcher, findings."""

    adapter: KafkaAdapter
    run_id: str
    ensure_topic: Callable[[str], None]
    launcher: Any = None
    timing: Timing = field(default_factory=Timing)
    groups: int = 0
    rtt_ms: list[float] = field(default_factory=list)
    #: round-trip times of Heartbeat requests (always answered at once), in ms
    heartbeat_rtt_ms: list[float] = field(default_factory=list)
    ops: int = 0
    #: kafka-compat findings of every port (`conformance.engine.oracle.findings.Finding`)
    compat: list[Any] = field(default_factory=list)
    #: coordinator restarts the machine may ask for in this run (faults.restart; 0: the rule is off)
    max_restarts: int = 0
    restarts_done: int = 0
    #: how a restart stops the target: kill (SIGKILL, a crash; default) or term (clean shutdown)
    restart_signal: str = "kill"
    #: (stopped, loaded after, serving again) in port ms, per restart
    restart_times: list[tuple[int, int, int]] = field(default_factory=list)
    #: answers the fault proxy swallowed (LoseResponse on the wire), and transient-error resends
    wire_drops: int = 0
    resends: int = 0
    #: requests the proxy duplicated, connections cut (CutConnection, DuplicateRequest)
    wire_duplicates: int = 0
    wire_cuts: int = 0
    #: requests the proxy held until released (the consumer machine's delay_request)
    wire_delays: int = 0
    #: names this session's groups apart from those of other sessions of the same run (``--groups``)
    group_tag: str = ""

    def real_topic(self, name: str, partitions: int) -> str:
        return f"gc-{self.run_id}-{name}-{partitions}"

    def next_group(self) -> str:
        self.groups += 1
        return f"gc-{self.run_id}{self.group_tag}-g{self.groups}"

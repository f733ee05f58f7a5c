"""What both mixed-group machines share (on the model and on a real coordinator): the run, its
members, and how a step's observations are judged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.engine.machine import GroupMachine, MachineSettings

CLASSIC_ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")


MAX_LIVE = 5


class MixedGroupMachine(GroupMachine):
    """What both mixed machines share: the run, its members, and how a step's observations are judged."""

    protocol = "mixed"
    #: classic members' timeouts (ms)
    classic_session_ms = 10_000
    classic_rebalance_ms = 20_000
    #: KIP-848 members' rebalance timeout (ms; None: the client's default)
    consumer_rebalance_ms: int | None = None

    def __init__(self, settings: MachineSettings, checker: Any = None) -> None:
        super().__init__(settings, checker)
        self.run: Any = None  # a TracedMixedRun (the model) or a RealMixedRun
        self.assignor = "range"
        self.count = 0

    def _do(self, what: str | None, action: Callable[[], Any]) -> None:
        """Note ``what``, run ``action``, judge every observation it made."""
        assert self.run is not None
        if what is not None:
            self.steps.append(what)
        mark = len(self.run.observations)
        action()
        self._check_port()
        fresh = self.run.observations[mark:]
        del self.run.observations[:]  # keep memory flat; the machine keeps its own list
        for obs in fresh:
            self.observations.append(obs)
            self.judge(obs, self.run.step_of(obs), self.run)

    def _check_port(self) -> None:
        """After each action: whatever the port noticed that ends the run (a real target's)."""

    def _live(self) -> list[str]:
        assert self.run is not None
        return [n for n in sorted(self.run.clients) if n not in self.run.stopped]

    def _add(self, classic: bool, instance: str | None = None, join_version: int = 9) -> str:
        assert self.run is not None
        self.count += 1
        if classic:
            name = f"c{self.count}"
            self.run.add_classic(
                name,
                topics=("t",),
                assignors=(self.assignor,),
                instance_id=instance,
                join_version=join_version,
                session_timeout_ms=self.classic_session_ms,
                rebalance_timeout_ms=self.classic_rebalance_ms,
            )
        else:
            name = f"k{self.count}"
            timeouts = (
                {}
                if self.consumer_rebalance_ms is None
                else {"rebalance_timeout_ms": self.consumer_rebalance_ms}
            )
            self.run.add_consumer(name, topics=("t",), instance_id=instance, **timeouts)
        self.steps.append(f"start {name}" + (f" (instance {instance})" if instance else ""))
        return name

    def _instance(self, name: str) -> str | None:
        """The client's ``group.instance.id`` (classic: its config; KIP-848: the consumer's own)."""
        assert self.run is not None
        c = self.run.clients[name]
        found = getattr(c, "instance_id", None) or getattr(getattr(c, "config", None), "instance_id", None)
        return str(found) if found else None

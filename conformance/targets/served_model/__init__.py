"""The reference model served over the wire (`groupcheck serve`) as a target, optionally with a mutant.

``served-model`` runs ``groupcheck serve`` in a child process with the same test-friendly group
settings as the ``apache-kafka`` launcher, so the oracle judges the model's own answers after the
Kafka wire: every divergence on it is the oracle's or the wire path's fault (a self-check).
``served-model:NAME`` serves the coordinator mutant NAME (docs/mutants.md) instead: a coordinator
with a known bug, judged the way a broker team's coordinator is judged (docs/real-targets.md#served-model).
Nothing to download; topics are given at start.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from conformance.targets.base import Target
from conformance.targets.cache import digest
from conformance.targets.open import SERVED_PREFIX
from conformance.targets.process import Deadline, Proc, TargetError, read_line


class ServedModelTarget(Target):
    name = "served-model"
    description = "the reference model (or a coordinator mutant) served over the Kafka wire"
    capabilities = frozenset(
        {"api_versions", "classic", "consumer", "mixed", "static_members", "seed_topics"}
    )
    stop_grace_s = 5.0

    def __init__(self, *, mutant: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if mutant is not None:
            from conformance.errors import UsageError
            from conformance.mutants import get_mutant

            if get_mutant(mutant).coordinator is None:
                raise UsageError(
                    f"--target {SERVED_PREFIX}{mutant}: not a coordinator mutant; "
                    "only a coordinator can be served"
                )
        self.mutant = mutant

    def default_settings(self) -> dict[str, Any]:
        return {
            "group.initial.rebalance.delay.ms": 0,
            "group.min.session.timeout.ms": 500,
            "group.max.session.timeout.ms": 1_800_000,
            "group.consumer.session.timeout.ms": 2000,
            "group.consumer.heartbeat.interval.ms": 500,
            "group.consumer.assignment.interval.ms": 0,
        }

    def pinned_version(self) -> str:
        from importlib.metadata import version

        served = f"mutant {self.mutant}" if self.mutant else "reference model"
        try:
            return f"groupcheck {version('groupcheck')} ({served})"
        except Exception:  # noqa: BLE001 - not installed as a distribution
            return f"groupcheck ({served})"

    def version(self) -> str:
        return self.pinned_version()

    def provision_key(self) -> str:
        return digest(Path(__file__), sys.executable)

    def _provision(self, deadline: Deadline, log_path: Path) -> dict[str, Any]:
        return {"version": self.pinned_version(), "python": sys.executable}

    def _launch(
        self, run_dir: Path, log_path: Path, deadline: Deadline
    ) -> tuple[list[Proc], str, dict[str, Any]]:
        argv = [sys.executable, "-m", "conformance.cli.main", "serve", "--port", "0", "--duration", "86400"]
        topics = self.topics or {"t": 3}
        argv += ["--topics", ",".join(f"{name}:{n}" for name, n in topics.items())]
        for key, value in self.settings.items():
            argv += ["--config", f"{key}={value}"]
        if self.mutant:
            argv += ["--mutant", self.mutant]
        proc = self._spawn("serve", argv, log_path, cwd=run_dir, env=self._child_env(), stdout_pipe=True)
        line = read_line(proc, deadline, "its address")
        m = re.match(r"serving on (127\.0\.0\.1:\d+) ", line)
        if m is None:
            raise TargetError(f"printed {line[:200]!r} instead of its address")
        return [proc], m.group(1), {}

    def _create_topic(self, name: str, partitions: int, deadline: Deadline) -> None:
        raise TargetError(f"{self.name}: has no CreateTopics; topics are given at start ({name!r})")


TARGET = ServedModelTarget

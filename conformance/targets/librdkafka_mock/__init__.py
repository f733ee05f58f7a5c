"""librdkafka's mock cluster (from the confluent-kafka wheel) as a target, out of process.

The mock runs in a child Python process (``mock_cluster.py`` beside this file) that loads the
bundled librdkafka with ctypes, so an abort inside librdkafka takes down that process only and is
reported as TargetCrashed. Nothing to download: provisioning checks that the library is there and
records its version. The mock has no CreateTopics: topics are created at start (``topics=``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from conformance.resources import package_dir
from conformance.targets.base import Target
from conformance.targets.cache import digest
from conformance.targets.process import Deadline, Proc, TargetError, read_line, run_tool

SCRIPT = package_dir(__name__) / "mock_cluster.py"


class LibrdkafkaMockTarget(Target):
    name = "librdkafka-mock"
    description = "librdkafka mock cluster (confluent-kafka wheel), one broker, own process"
    capabilities = frozenset({"api_versions", "classic", "consumer", "static_members", "seed_topics"})
    stop_grace_s = 5.0

    def default_settings(self) -> dict[str, Any]:
        return {
            "group.initial.rebalance.delay.ms": 0,
            "group.consumer.session.timeout.ms": 2000,
            "group.consumer.heartbeat.interval.ms": 500,
        }

    def pinned_version(self) -> str:
        try:
            from importlib.metadata import version

            return f"confluent-kafka {version('confluent-kafka')}"
        except Exception:
            return "unknown"

    def provision_key(self) -> str:
        return digest(SCRIPT, sys.executable, self.pinned_version())

    def _provision(self, deadline: Deadline, log_path: Path) -> dict[str, Any]:
        out = run_tool(
            [sys.executable, str(SCRIPT), "--version"],
            deadline=deadline, log_path=log_path, what="librdkafka version check",
        )  # fmt: skip
        version = out.strip().splitlines()[-1] if out.strip() else ""
        if not re.fullmatch(r"\d+\.\d+\.\d+\S*", version):
            raise TargetError(f"unexpected librdkafka version output {out.strip()[:100]!r}")
        return {"version": version, "python": sys.executable, "wheel": self.pinned_version()}

    def _launch(
        self, run_dir: Path, log_path: Path, deadline: Deadline
    ) -> tuple[list[Proc], str, dict[str, Any]]:
        s = self.settings
        argv = [
            sys.executable, str(SCRIPT),
            "--brokers", "1",
            "--initial-rebalance-delay-ms", str(int(s["group.initial.rebalance.delay.ms"])),
            "--consumer-session-timeout-ms", str(int(s["group.consumer.session.timeout.ms"])),
            "--consumer-heartbeat-interval-ms", str(int(s["group.consumer.heartbeat.interval.ms"])),
            "--wait", "signal" if self._detach_now else "stdin",
        ]  # fmt: skip
        for name, partitions in self.topics.items():
            argv += ["--topic", f"{name}:{partitions}"]
        proc = self._spawn(
            "mock", argv, log_path, cwd=run_dir, env=self._child_env(), stdin_pipe=True, stdout_pipe=True
        )
        bootstrap = read_line(proc, deadline, "its bootstrap list")
        if not re.fullmatch(r"127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+)*", bootstrap):
            raise TimeoutError(f"printed {bootstrap!r} instead of a loopback bootstrap list")
        return [proc], bootstrap, {}

    def _create_topic(self, name: str, partitions: int, deadline: Deadline) -> None:
        raise TargetError(
            f"{self.name}: has no CreateTopics; give topics at start (get_target(..., topics={{{name!r}: {partitions}}}))"
        )


TARGET = LibrdkafkaMockTarget

"""Real consumers as child processes: librdkafka (confluent-kafka), franz-go's kgo, Java's KafkaConsumer.

Each speaks one line protocol (docs/clients.md, "Real consumers"): commands ``commit OFFSET`` and
``leave`` on stdin, JSON events on stdout. The Java harness (``java-consumer/``) is built by Maven
against the asked kafka-clients version and the franz-go one (``go-consumer/``) by ``go build``,
once each into ``<cache>/clients/``; librdkafka is the confluent-kafka wheel installed here. A
`Consumer` reads events on a thread into a queue; every wait has a deadline, and the process is
stopped through its own process group.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.errors import TargetError, UsageError
from conformance.resources import package_dir
from conformance.targets import cache as target_cache
from conformance.targets import process
from conformance.targets.cache import digest, file_lock
from conformance.targets.maven import run_maven
from conformance.targets.process import Deadline, Proc, java_bin, require_tool, run_tool

HERE = package_dir("conformance.clients")
JAVA_DIR = HERE / "java-consumer"
JAVA_SOURCE = JAVA_DIR / "src" / "main" / "java" / "groupcheck" / "ConsumerHarness.java"
GO_DIR = HERE / "go-consumer"
KINDS = ("librdkafka", "kgo", "java")
PROVISION_TIMEOUT_S = 900.0
MAX_EVENT = 1 << 16
MAX_EVENTS = 100_000


@dataclass(frozen=True)
class ClientSpec:
    """``librdkafka``, ``kgo`` or ``java[:VERSION]`` (kafka-clients 3.7+: group.protocol=consumer)."""

    kind: str
    version: str

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.version}"


def parse_client(text: str) -> ClientSpec:
    kind, _, version = text.partition(":")
    if kind == "java":
        version = version or _pinned(JAVA_DIR / "pom.xml", r"<kafka\.version>([^<]+)</kafka\.version>")
        m = re.fullmatch(r"(\d+)\.(\d+)\.\d+", version)
        if not m or (int(m.group(1)), int(m.group(2))) < (3, 7):
            raise UsageError(f"--client {text!r}: a kafka-clients version 3.7.0 or later, like 4.4.0")
        return ClientSpec("java", version)
    if kind == "kgo":
        pinned = _pinned(GO_DIR / "go.mod", r"github.com/twmb/franz-go (v\S+)")
        if version and version.lstrip("v") != pinned.lstrip("v"):
            raise UsageError(f"--client {text!r}: the franz-go consumer is built with {pinned} (go.mod)")
        return ClientSpec("kgo", pinned)
    if kind == "librdkafka":
        try:
            import confluent_kafka
        except ImportError as e:
            raise TargetError("librdkafka: confluent-kafka is not installed") from e
        installed = str(confluent_kafka.libversion()[0])
        if version and version != installed:
            raise UsageError(f"--client {text!r}: the installed librdkafka is {installed}")
        return ClientSpec("librdkafka", installed)
    raise UsageError(f"--client {text!r}: expected librdkafka, kgo or java[:VERSION]")


def _pinned(path: Path, pattern: str) -> str:
    m = re.search(pattern, path.read_text())
    return m.group(1) if m else ""


def provision(client: ClientSpec, timeout_s: float = PROVISION_TIMEOUT_S) -> list[str]:
    """The command starting `client`'s consumer (built once per version and source)."""
    if client.kind == "librdkafka":
        return [sys.executable, "-m", "conformance.clients.rdkafka_consumer"]
    where = cache_dir_for(client)
    if client.kind == "java":
        key = digest(JAVA_DIR / "pom.xml", JAVA_SOURCE, client.version)
        command = [
            java_bin(),
            "-Xms32m",
            "-Xmx256m",
            "-cp",
            f"{where / 'harness.jar'}{os.pathsep}{where / 'libs'}/*",
        ]
        command.append("groupcheck.ConsumerHarness")
    else:
        key = digest(GO_DIR / "main.go", GO_DIR / "go.mod", GO_DIR / "go.sum", client.version)
        command = [str(where / "bin" / "go-consumer"), "-stdin"]
    stamp = where / "provisioned.json"

    def cached() -> bool:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            return bool(json.loads(stamp.read_text()).get("key") == key)
        return False

    if cached():
        return command
    deadline = Deadline(timeout_s)
    where.mkdir(parents=True, exist_ok=True)
    with file_lock(where / ".provision.lock", deadline, f"{client.spec}: building the consumer"):
        if not cached():
            try:
                (_build_java if client.kind == "java" else _build_go)(client, where, deadline)
            except (process.TargetError, TimeoutError) as e:
                raise TargetError(f"{client.spec}: building the consumer failed: {e}") from e
            stamp.write_text(json.dumps({"key": key, "client": client.spec}, sort_keys=True))
    return command


def cache_dir_for(client: ClientSpec) -> Path:
    return target_cache.cache_root().parent / "clients" / f"{client.kind}-consumer-{client.version}"


def _build_java(client: ClientSpec, where: Path, deadline: Deadline) -> None:
    mvn = require_tool("mvn", "install Maven to build the Java consumer harness")
    build = where / "build"
    shutil.rmtree(build, ignore_errors=True)
    shutil.copytree(JAVA_DIR, build)
    staging = where / "libs.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    goals = [
        "-q", "-B", "-f", str(build / "pom.xml"), f"-Dkafka.version={client.version}", "package",
        "dependency:copy-dependencies", f"-DoutputDirectory={staging}", "-DincludeScope=runtime",
    ]  # fmt: skip
    log = where / "provision.log"
    what = f"mvn package (kafka-clients {client.version})"
    run_maven(mvn, goals, deadline=deadline, log_path=log, what=what, offline_first=True)
    if not (staging / f"kafka-clients-{client.version}.jar").exists():
        raise process.TargetError(f"Maven gave no kafka-clients-{client.version}.jar")
    shutil.rmtree(where / "libs", ignore_errors=True)
    staging.replace(where / "libs")
    (build / "target" / "consumer-harness-1.jar").replace(where / "harness.jar")
    shutil.rmtree(build, ignore_errors=True)


def _build_go(client: ClientSpec, where: Path, deadline: Deadline) -> None:
    go = require_tool("go", "install Go to build the franz-go consumer")
    env = {
        **os.environ,
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
        "GOFLAGS": "-mod=readonly -buildvcs=false",
    }
    binary = where / "bin" / "go-consumer"
    binary.parent.mkdir(parents=True, exist_ok=True)
    tmp = binary.with_suffix(".tmp")
    run_tool(
        [go, "build", "-trimpath", "-o", str(tmp), "."], deadline=deadline, log_path=where / "provision.log",
        what=f"go build (franz-go {client.version})", cwd=GO_DIR, env=env,
    )  # fmt: skip
    tmp.replace(binary)


class Consumer:
    """One running consumer process: `send` a command, `wait_for` an event, `stop`; all bounded."""

    def __init__(self, command: list[str], name: str, log_path: Path, **flags: str) -> None:
        argv = [*command]
        for key, value in flags.items():
            argv += [f"--{key.replace('_', '-')}", value]
        self.name = name
        self.events: list[dict[str, Any]] = []
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue()
        self.proc: Proc | None = process.spawn(
            f"consumer {name}", argv, log_path=log_path, stdin_pipe=True, stdout_pipe=True
        )
        threading.Thread(target=self._read, name=f"events {name}", daemon=True).start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.popen is not None and self.proc.popen.stdout is not None
        for count, raw in enumerate(self.proc.popen.stdout):
            if count >= MAX_EVENTS or len(raw) > MAX_EVENT:
                break
            with contextlib.suppress(ValueError, UnicodeDecodeError):
                event = json.loads(raw)
                if isinstance(event, dict) and isinstance(event.get("event"), str):
                    self._queue.put(event)

    def drain(self) -> list[dict[str, Any]]:
        """Events that arrived since the last call (also kept in `events`)."""
        got: list[dict[str, Any]] = []
        with contextlib.suppress(queue.Empty):
            while True:
                got.append(self._queue.get_nowait())
        self.events += got
        return got

    def wait_for(self, event: str, seconds: float, where: Any = None) -> dict[str, Any] | None:
        """The next `event` (matching `where`, a predicate) within `seconds`; None at the deadline."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            with contextlib.suppress(queue.Empty):
                got = self._queue.get(timeout=min(0.2, max(0.01, end - time.monotonic())))
                self.events.append(got)
                if got["event"] == event and (where is None or where(got)):
                    return got
        return None

    def send(self, command: str) -> None:
        if self.proc is None or self.proc.popen is None or self.proc.popen.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self.proc.popen.stdin.write(command.encode() + b"\n")
            self.proc.popen.stdin.flush()

    def stop(self, seconds: float = 20.0) -> int | None:
        """Ask it to leave, wait up to `seconds`, then stop its process group; its exit code."""
        if self.proc is None:
            return None
        self.send("leave")
        end = time.monotonic() + seconds
        while time.monotonic() < end and self.proc.alive():
            time.sleep(0.05)
        code = self.proc.returncode()
        process.terminate(self.proc, Deadline(15.0), grace_s=2.0)
        self.proc = None
        self.drain()
        return code

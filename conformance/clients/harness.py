"""Building and running an assignor harness: Java kafka-clients (Maven) or franz-go (go build).

A harness is built once per library version into ``<cache>/clients/<library>-<version>/`` (beside
the targets' cache, ``~/.cache/groupcheck/``), keyed by its sources and the version: Maven runs
offline first (``-o``) and online only when the local repository lacks something; Go uses the
module proxy. One process per run answers every request (conformance/clients/protocol.md); every
read waits against a total deadline, and the process is stopped by its own process group.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.clients.protocol import MAX_ANSWER, AnswerError, decode_hello, decode_line
from conformance.errors import TargetError, UsageError
from conformance.resources import package_dir
from conformance.targets import cache as target_cache
from conformance.targets import process
from conformance.targets.cache import digest, file_lock
from conformance.targets.maven import run_maven
from conformance.targets.process import Deadline, Proc, java_bin, require_tool, run_tool

HERE = package_dir("conformance.clients")  # the harness sources: package data
JAVA_DIR = HERE / "java"
JAVA_SOURCE = JAVA_DIR / "src" / "main" / "java" / "groupcheck" / "AssignorHarness.java"
GO_DIR = HERE / "go"
PROVISION_TIMEOUT_S = 900.0
START_TIMEOUT_S = 60.0
ANSWER_TIMEOUT_S = 60.0
MAX_REQUEST = 1 << 20

_JAVA_VERSION = re.compile(r"\d+\.\d+\.\d+")
_GO_VERSION = re.compile(r"v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?")


def _java_pinned() -> str:
    m = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", (JAVA_DIR / "pom.xml").read_text())
    return m.group(1) if m else ""


def _go_pinned() -> str:
    m = re.search(r"github.com/twmb/franz-go (v\S+)", (GO_DIR / "go.mod").read_text())
    return m.group(1) if m else ""


@dataclass(frozen=True)
class Library:
    """A client library and version to test: ``java:4.4.0``, ``java:2.2.2``, ``franz-go``, ``franz-go:v1.22.3``."""

    kind: str  # "java" or "franz-go"
    version: str

    @property
    def name(self) -> str:
        return "kafka-clients" if self.kind == "java" else "franz-go"

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.version}"

    @property
    def slug(self) -> str:
        return f"{self.kind}-{self.version}"


def parse_library(text: str) -> Library:
    """``java[:VERSION]`` or ``franz-go[:VERSION]``; versions are checked so they are safe to hand to a build."""
    kind, _, version = text.partition(":")
    if kind == "java":
        version = version or _java_pinned()
        if not _JAVA_VERSION.fullmatch(version):
            raise UsageError(f"--library {text!r}: a kafka-clients version looks like 4.4.0")
        return Library("java", version)
    if kind == "franz-go":
        version = version or _go_pinned()
        if not version.startswith("v"):
            version = "v" + version
        if not _GO_VERSION.fullmatch(version):
            raise UsageError(f"--library {text!r}: a franz-go version looks like v1.22.3")
        return Library("franz-go", version)
    raise UsageError(f"--library {text!r}: expected java:VERSION or franz-go[:VERSION]")


def cache_dir(library: Library) -> Path:
    return target_cache.cache_root().parent / "clients" / library.slug


def _provision_key(library: Library) -> str:
    if library.kind == "java":
        return digest(JAVA_DIR / "pom.xml", JAVA_SOURCE, library.version)
    return digest(GO_DIR / "main.go", GO_DIR / "go.mod", GO_DIR / "go.sum", library.version)


def _command(library: Library, where: Path) -> list[str]:
    if library.kind == "java":
        classpath = f"{where / 'harness.jar'}{os.pathsep}{where / 'libs'}/*"
        return [java_bin(), "-Xms32m", "-Xmx256m", "-Xss4m", "-cp", classpath, "groupcheck.AssignorHarness"]
    return [str(where / "bin" / "assignor-harness")]


def provision(library: Library, timeout_s: float = PROVISION_TIMEOUT_S) -> list[str]:
    """Build the harness for `library` unless cached; returns the command that starts it."""
    where = cache_dir(library)
    stamp = where / "provisioned.json"
    key = _provision_key(library)
    deadline = Deadline(timeout_s)

    def cached() -> bool:
        try:
            return json.loads(stamp.read_text()).get("key") == key
        except (OSError, ValueError, AttributeError):
            return False

    if cached():
        return _command(library, where)
    where.mkdir(parents=True, exist_ok=True)
    with file_lock(where / ".provision.lock", deadline, f"{library.spec}: building the harness"):
        if not cached():
            t0 = time.monotonic()
            try:
                if library.kind == "java":
                    _build_java(library, where, deadline)
                else:
                    _build_go(library, where, deadline)
            except (process.TargetError, TimeoutError) as e:
                raise TargetError(f"{library.spec}: building the assignor harness failed: {e}") from e
            facts = {"key": key, "library": library.spec, "build_s": round(time.monotonic() - t0, 2)}
            tmp = stamp.with_suffix(".tmp")
            tmp.write_text(json.dumps(facts, indent=2, sort_keys=True))
            tmp.replace(stamp)
    return _command(library, where)


def _build_java(library: Library, where: Path, deadline: Deadline) -> None:
    mvn = require_tool("mvn", "install Maven to build the Java assignor harness")
    build = where / "build"
    shutil.rmtree(build, ignore_errors=True)
    shutil.copytree(JAVA_DIR, build)
    staging = where / "libs.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    goals = [
        "-q", "-B", "-f", str(build / "pom.xml"), f"-Dkafka.version={library.version}", "package",
        "dependency:copy-dependencies", f"-DoutputDirectory={staging}", "-DincludeScope=runtime",
    ]  # fmt: skip
    log = where / "provision.log"
    what = f"mvn package (kafka-clients {library.version})"
    run_maven(mvn, goals, deadline=deadline, log_path=log, what=what, offline_first=True)
    if not (staging / f"kafka-clients-{library.version}.jar").exists():
        raise process.TargetError(f"Maven gave no kafka-clients-{library.version}.jar")
    shutil.rmtree(where / "libs", ignore_errors=True)
    staging.replace(where / "libs")
    (build / "target" / "assignor-harness-1.jar").replace(where / "harness.jar")
    shutil.rmtree(build, ignore_errors=True)


def _build_go(library: Library, where: Path, deadline: Deadline) -> None:
    go = require_tool("go", "install Go to build the franz-go assignor harness")
    src = where / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    for name in ("main.go", "go.mod", "go.sum"):
        shutil.copyfile(GO_DIR / name, src / name)
    pinned = library.version == _go_pinned()
    env = {**os.environ, "GOTOOLCHAIN": "local", "CGO_ENABLED": "0"}
    env["GOFLAGS"] = "-mod=readonly -buildvcs=false" if pinned else "-mod=mod -buildvcs=false"
    log = where / "provision.log"
    if not pinned:
        run_tool(
            [go, "get", f"github.com/twmb/franz-go@{library.version}"],
            deadline=deadline, log_path=log, what=f"go get franz-go {library.version}", cwd=src, env=env,
        )  # fmt: skip
    binary = where / "bin" / "assignor-harness"
    binary.parent.mkdir(parents=True, exist_ok=True)
    tmp = binary.with_suffix(".tmp")
    run_tool(
        [go, "build", "-trimpath", "-o", str(tmp), "."],
        deadline=deadline, log_path=log, what=f"go build (franz-go {library.version})", cwd=src, env=env,
    )  # fmt: skip
    tmp.replace(binary)


class Harness:
    """One running harness process: send a request, read its answer line, within deadlines."""

    def __init__(self, library: Library, *, provision_timeout_s: float = PROVISION_TIMEOUT_S) -> None:
        self.library = library
        self.argv = provision(library, provision_timeout_s)
        self.log_path = cache_dir(library) / "harness.log"
        self.proc: Proc | None = None
        self.version = ""
        self._buf = b""

    def __enter__(self) -> Harness:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        self.proc = process.spawn(
            "assignor-harness", self.argv, log_path=self.log_path, stdin_pipe=True, stdout_pipe=True
        )
        hello = decode_line(self._read_line(Deadline(START_TIMEOUT_S), "its hello line"), "harness hello")
        self.version = decode_hello(hello, self.library.name)
        if self.version != self.library.version:
            raise TargetError(f"{self.library.spec}: the harness loaded version {self.version}")

    def close(self) -> None:
        if self.proc is not None:
            process.terminate(self.proc, Deadline(15.0), grace_s=2.0)
            self.proc = None

    def ask(self, request: dict[str, Any], timeout_s: float = ANSWER_TIMEOUT_S) -> dict[str, Any]:
        """Send one request line and return its answer line as a JSON object."""
        if self.proc is None or self.proc.popen is None or self.proc.popen.stdin is None:
            raise TargetError(f"{self.library.spec}: the harness is not running")
        line = json.dumps(request, sort_keys=True, separators=(",", ":")).encode() + b"\n"
        if len(line) > MAX_REQUEST:
            raise TargetError(f"{self.library.spec}: request {request['id']} is over {MAX_REQUEST} bytes")
        try:
            self.proc.popen.stdin.write(line)
            self.proc.popen.stdin.flush()
        except OSError as e:
            raise TargetError(
                f"{self.library.spec}: the harness stopped reading ({e}); log {self.log_path}"
            ) from e
        return decode_line(self._read_line(Deadline(timeout_s), f"answer {request['id']}"), "harness answer")

    def _read_line(self, deadline: Deadline, what: str) -> bytes:
        assert self.proc is not None and self.proc.popen is not None and self.proc.popen.stdout is not None
        fd = self.proc.popen.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                if len(self._buf) > MAX_ANSWER:
                    raise AnswerError(f"{self.library.spec}: {what} is longer than {MAX_ANSWER} bytes")
                left = deadline.remaining()
                if left <= 0:
                    raise TargetError(f"{self.library.spec}: no {what} within {deadline.seconds:g} s")
                if not sel.select(timeout=min(left, 0.5)):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    tail = process.log_tail(self.log_path)
                    raise TargetError(f"{self.library.spec}: the harness exited before {what}: {tail}")
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

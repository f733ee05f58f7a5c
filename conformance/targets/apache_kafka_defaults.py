"""Apache Kafka 4.x as it ships: every group setting at its default (docs/real-targets.md#launchers).

The same jars and start as `apache-kafka` (one KRaft process, broker and controller); only what a
single node needs is changed (the internal topics' replication factor 1). So the suite meets a
stock coordinator: a 6 s minimum session timeout, a 3 s initial rebalance delay, a 45 s consumer
session, a 5 s heartbeat interval and, since Kafka 4.2, target assignments batched every 1 s.
The oracle learns these by asking the broker (DescribeConfigs), as for any target it did not start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from conformance.targets.apache_kafka import ApacheKafkaTarget, _pom_version
from conformance.targets.cache import cache_root
from conformance.targets.process import Deadline


class ApacheKafkaDefaultsTarget(ApacheKafkaTarget):
    name = "apache-kafka-defaults"
    description = "Apache Kafka 4.x with its shipped group settings (single-node replication only)"
    #: the group settings it does not set are Kafka's own: asked, never assumed
    kafka_defaults: ClassVar[bool] = True

    @property
    def libs(self) -> Path:
        """The jars are apache-kafka's (one provisioning); runs, logs and pid file are this flavour's."""
        return cache_root() / "apache-kafka" / "libs"

    def _provision(self, deadline: Deadline, log_path: Path) -> dict[str, Any]:
        stock = ApacheKafkaTarget()
        stock.provision(max(1.0, deadline.remaining()))
        return {"version": _pom_version(), "libs": str(self.libs)}

    def default_settings(self) -> dict[str, Any]:
        return {"offsets.topic.replication.factor": 1}


TARGET = ApacheKafkaDefaultsTarget

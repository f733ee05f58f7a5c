"""Every Maven run groupcheck starts holds one lock on Maven's local repository.

Maven 3.8 does not coordinate processes that share ~/.m2, and the workers of `make test` may
provision the Apache Kafka target, its stock-defaults twin and the Java consumer at once.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from conformance.clients import consumers, harness
from conformance.targets import get_target, maven
from conformance.targets.cache import cache_base
from conformance.targets.maven import MAVEN_LOCK, maven_lock
from conformance.targets.process import Deadline, TargetError


def _held(path: Path) -> bool:
    """Whether another open file holds an exclusive flock on ``path``."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        assert e.errno in (errno.EAGAIN, errno.EACCES)
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GROUPCHECK_CACHE", str(tmp_path / "cache"))
    assert cache_base() == tmp_path / "cache"
    return cache_base() / MAVEN_LOCK


def _recording(seen: list[bool], lock: Path, fail_first: bool = False) -> Any:
    def run_tool(argv: list[str], **kwargs: Any) -> str:
        assert Path(argv[0]).name == "mvn"
        seen.append(_held(lock))
        raise TargetError("stopped here" if not fail_first or len(seen) > 1 else "offline: missing")

    return run_tool


def test_the_kafka_target_provisions_under_the_lock(cache: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    seen: list[bool] = []
    monkeypatch.setattr(maven, "run_tool", _recording(seen, cache))
    target = get_target("apache-kafka")
    with pytest.raises(TargetError, match="stopped here"):
        target._provision(Deadline(30), tmp_path / "provision.log")
    assert seen == [True]
    assert not _held(cache), "released once Maven is done"


@pytest.mark.parametrize("harness_kind", ["consumer", "assignor"])
def test_the_java_harnesses_build_under_the_lock_offline_and_online(  # type: ignore[no-untyped-def]
    harness_kind: str, cache: Path, tmp_path: Path, monkeypatch
) -> None:
    seen: list[bool] = []
    monkeypatch.setattr(maven, "run_tool", _recording(seen, cache, fail_first=True))
    with pytest.raises(TargetError, match="stopped here"):
        if harness_kind == "consumer":
            consumers._build_java(consumers.parse_client("java"), tmp_path / "java", Deadline(30))
        else:
            harness._build_java(harness.parse_library("java"), tmp_path / "java", Deadline(30))
    assert seen == [True, True], "the offline try and the online one both hold it"
    assert not _held(cache)


def test_a_second_run_waits_and_gives_up_at_its_deadline(cache: Path) -> None:
    errors: list[str] = []

    def second() -> None:
        try:
            with maven_lock(Deadline(0.5), "kafka-clients"):
                errors.append("entered")
        except TargetError as e:
            errors.append(str(e))

    with maven_lock(Deadline(5), "first"):
        thread = threading.Thread(target=second)
        thread.start()
        thread.join(10)
    assert len(errors) == 1 and errors[0].startswith("kafka-clients: Maven's local repository: lock ")
    assert "still held after 0.5s" in errors[0]
    with maven_lock(Deadline(1), "third"):  # free again
        assert _held(cache)

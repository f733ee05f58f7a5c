"""Maven runs of groupcheck's provisioning (the Apache Kafka target, the Java consumer and assignor
harnesses): one at a time on the machine, offline first where the local repository may already
hold everything.

Maven 3 before 3.9 coordinates its local repository (~/.m2) between the threads of one JVM only,
not between processes that share it
(https://maven.apache.org/resolver/maven-resolver-impl/synccontextfactory.html); two provisionings
at once, as the workers of `make test` start them, would fill it together. Every run holds
`MAVEN_LOCK` in groupcheck's cache.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from conformance.targets.cache import cache_base, file_lock
from conformance.targets.process import Deadline, TargetError, run_tool

MAVEN_LOCK = ".maven.lock"


@contextlib.contextmanager
def maven_lock(deadline: Deadline, what: str) -> Iterator[None]:
    """Held around every Maven run, waited for until the deadline."""
    with file_lock(cache_base() / MAVEN_LOCK, deadline, f"{what}: Maven's local repository"):
        yield


def run_maven(
    mvn: str,
    goals: Sequence[str],
    *,
    deadline: Deadline,
    log_path: Path,
    what: str,
    offline_first: bool = False,
) -> str:
    """``mvn goals`` under the lock; ``offline_first``: try ``-o`` and fetch only when that fails."""
    with maven_lock(deadline, what):
        if offline_first:
            try:
                return run_tool(
                    [mvn, "-o", *goals], deadline=deadline, log_path=log_path, what=what + " offline"
                )
            except TargetError:  # the local repository lacks something: fetch it from Maven Central
                pass
        return run_tool([mvn, *goals], deadline=deadline, log_path=log_path, what=what)

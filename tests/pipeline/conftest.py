"""One SparkSession for every Spark test (shared and session-scoped, to keep CI time small)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from conformance.pipeline.session import get_session

    session = get_session("local[2]", "groupcheck-tests", shuffle_partitions=2)
    yield session
    session.stop()

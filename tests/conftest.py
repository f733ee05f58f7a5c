"""The test session runs with the collector thresholds `groupcheck` sets (conformance/engine/collector.py)."""

from __future__ import annotations

import pytest

from conformance.engine import collector


def pytest_configure(config: pytest.Config) -> None:
    collector.tune()

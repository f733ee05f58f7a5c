"""pytest plugin (entry point `pytest11`): `--groupcheck-*` options and a `coordinator` fixture (design §9)."""

from __future__ import annotations

from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("groupcheck")
    group.addoption("--groupcheck-target", default="model", help="coordinator under test (default: model)")
    group.addoption("--groupcheck-profile", default="dev", help="hypothesis profile: dev, ci, thorough")


@pytest.fixture
def coordinator(request: pytest.FixtureRequest) -> Any:
    """The coordinator port under test; the in-process model unless --groupcheck-target says otherwise."""
    from model.classic.sim import ModelPort

    target = request.config.getoption("--groupcheck-target")
    if target != "model":
        pytest.fail(f"--groupcheck-target {target}: only the model target exists in this version")
    return ModelPort()

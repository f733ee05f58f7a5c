"""pytest plugin (entry point `pytest11`): `--groupcheck-*` options, a `coordinator` fixture and the
`groupcheck_requires(capability)` marker (docs/cli.md#pytest-plugin)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("groupcheck")
    group.addoption(
        "--groupcheck-target",
        default="model",
        help="coordinator under test: model, mutant:NAME, a target name (apache-kafka, kfake, ...) or host:port",
    )
    group.addoption("--groupcheck-profile", default="dev", help="hypothesis profile: dev, ci, thorough")


@pytest.fixture(scope="session")
def groupcheck_target(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The target handle (conformance.targets.open.TargetHandle), started once per session."""
    from conformance.errors import ToolError
    from conformance.targets.open import open_target

    spec = request.config.getoption("--groupcheck-target")
    try:
        with open_target(spec) as handle:
            yield handle
    except ToolError as e:
        pytest.fail(f"--groupcheck-target {spec}: {e}")


@pytest.fixture
def coordinator(groupcheck_target: Any, request: pytest.FixtureRequest) -> Any:
    """A classic coordinator port under test: the in-process model, or the real target behind the oracle.

    A test marked ``groupcheck_requires("static_members")`` is skipped when the target's capabilities
    (from ApiVersions) lack it.
    """
    from conformance.protocols.build import classic_config
    from model.choice import SeededChooser
    from model.classic.coordinator import ClassicCoordinator
    from model.classic.port import ModelPort

    for mark in request.node.iter_markers("groupcheck_requires"):
        caps = groupcheck_target.capabilities
        features = caps.features if caps is not None else frozenset({"classic", "static_members"})
        for needed in mark.args:
            if needed not in features:
                pytest.skip(f"{groupcheck_target.name} lacks {needed}")
    coord = ClassicCoordinator(classic_config(groupcheck_target.model_config, "target"), SeededChooser(0))
    factory = groupcheck_target.port_factory()
    port = ModelPort(coord) if factory is None else factory(coord)
    yield port
    close = getattr(port, "close", None)
    if close is not None:
        close()

"""pytest plugin (entry point `pytest11`, docs/cli.md#pytest-plugin): the conformance suite as test items.

``pytest --groupcheck-target NAME|host:port`` in any repository adds the suite to the collected
items: ``groupcheck::<protocol>::check`` (the stateful run of that protocol), one item per invariant
of the protocol (``groupcheck::<protocol>::<invariant id>``, judged from that run) and
``groupcheck::scenarios::<id>`` per named scenario. -k, -m, -x, --junitxml, --hypothesis-profile and
--hypothesis-seed work as on any test. One fixture API for every target: ``groupcheck`` (the
`conformance.cli.suite.Suite`: ``.target``, ``.check(protocol)``, ``.scenario_outcome(id)``),
``groupcheck_target`` (the open target handle) and ``coordinator`` (a classic port: the model, a
mutant or the real target behind the oracle). ``@pytest.mark.groupcheck_requires("consumer")``
skips a test when the target lacks a capability.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SUITE_KEY = pytest.StashKey[Any]()
MARKERS = (
    "groupcheck: an item of the groupcheck conformance suite (added by --groupcheck-target)",
    "groupcheck_requires(capability): skip unless the coordinator under test offers the capability "
    "(classic, consumer, static_members, ...)",
)
#: the protocol of the ``coordinator`` fixture's port (a classic coordinator)
PROTOCOL = "classic"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("groupcheck", "groupcheck conformance suite")
    group.addoption(
        "--groupcheck-target",
        default=None,
        metavar="TARGET",
        help="run the conformance suite against TARGET: model, mutant:NAME, apache-kafka, kfake, "
        "librdkafka-mock, tansu, kafka-0.9, or host:port (default: not collected; fixtures use model)",
    )
    group.addoption(
        "--groupcheck-profile",
        default="dev",
        choices=["dev", "ci", "thorough", "faults"],
        help="examples and steps per run (faults: with wire faults); default dev",
    )
    group.addoption(
        "--groupcheck-protocol",
        default="all",
        choices=["classic", "consumer", "mixed", "all"],
        help="which protocols' items to collect (default all)",
    )
    group.addoption(
        "--groupcheck-variant",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a model variant for the stateful runs (groupcheck check --help lists them)",
    )
    group.addoption(
        "--groupcheck-target-config",
        action="append",
        default=[],
        metavar="FILE|KEY=VALUE",
        help="a group setting the target runs with, as groupcheck check --target-config (repeatable)",
    )
    group.addoption(
        "--groupcheck-report-dir",
        default="groupcheck-reports",
        metavar="DIR",
        help="where counterexamples are written (default ./groupcheck-reports)",
    )


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    spec = config.getoption("--groupcheck-target", default=None)
    if spec is not None:
        _check_target(spec)
        from conformance.engine import collector

        collector.tune()  # as `groupcheck check` does


def _check_target(spec: str) -> None:
    """A target name nothing can open is a usage error before anything runs (pytest exit 4)."""
    from conformance.errors import ToolError
    from conformance.targets import TARGETS
    from conformance.targets.open import HOST_PORT, MUTANT_PREFIX, SERVED_PREFIX, _plugin

    try:
        for prefix in (MUTANT_PREFIX, SERVED_PREFIX):
            if spec.startswith(prefix):
                from conformance.mutants import get_mutant

                get_mutant(spec[len(prefix) :])
                return
        if spec == "model" or spec in TARGETS or HOST_PORT.match(spec) or _plugin(spec) is not None:
            return
    except ToolError as e:
        raise pytest.UsageError(f"--groupcheck-target {spec}: {e}") from None
    raise pytest.UsageError(
        f"--groupcheck-target {spec}: unknown (use model, mutant:NAME, served-model:NAME, host:port or one of "
        f"{', '.join(TARGETS)})"
    )


def _seed(config: pytest.Config) -> int:
    raw = config.getoption("--hypothesis-seed", default=None)
    if raw is None:
        return 0
    try:
        return int(raw)
    except ValueError:
        import zlib

        return zlib.crc32(str(raw).encode())


def _suite(config: pytest.Config) -> Any:
    """The session's Suite (made on first use); --hypothesis-profile sets examples and steps."""
    suite = config.stash.get(SUITE_KEY, None)
    if suite is None:
        from conformance.cli.suite import Suite
        from conformance.protocols import parse_variants

        examples = steps = None
        profile_name = config.getoption("--hypothesis-profile", default=None)
        if profile_name:
            from hypothesis import settings

            chosen = settings.get_profile(profile_name)
            examples, steps = chosen.max_examples, chosen.stateful_step_count
        suite = Suite(
            config.getoption("--groupcheck-target") or "model",
            profile=config.getoption("--groupcheck-profile"),
            seed=_seed(config),
            max_examples=examples,
            step_count=steps,
            variants=parse_variants(config.getoption("--groupcheck-variant")),
            report_dir=Path(config.getoption("--groupcheck-report-dir")),
            target_config=config.getoption("--groupcheck-target-config"),
        )
        config.stash[SUITE_KEY] = suite
    return suite


def pytest_unconfigure(config: pytest.Config) -> None:
    suite = config.stash.get(SUITE_KEY, None)
    if suite is not None:
        suite.close()


# ---------------------------------------------------------------------- collection
class GroupcheckItem(pytest.Item):
    """One unit of the suite; ``kind`` is check, invariant or scenario."""

    def __init__(self, *, kind: str, protocol: str, key: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.kind, self.protocol, self.key = kind, protocol, key
        self.add_marker("groupcheck")

    def runtest(self) -> None:
        from conformance.errors import ToolError

        suite = _suite(self.config)
        try:
            if self.kind == "check":
                outcome = suite.check_outcome(self.protocol)
            elif self.kind == "invariant":
                outcome = suite.invariant_outcome(self.protocol, self.key)
            else:
                outcome = suite.scenario_outcome(self.key)
        except ToolError as e:
            raise GroupcheckFailure(f"groupcheck: error: {e}") from None
        self.user_properties.extend(sorted(outcome.properties.items()))
        if outcome.status == "skipped":
            pytest.skip(outcome.message)
        if outcome.status == "failed":
            raise GroupcheckFailure(outcome.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, GroupcheckFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"groupcheck {self.protocol} {self.kind}: {self.key}"


class GroupcheckFailure(Exception):
    """A suite item that failed: its message is the whole report (no traceback)."""


class GroupcheckCollector(pytest.Collector):
    def collect(self) -> Iterator[pytest.Item]:  # pragma: no cover - collection happens in the hook
        return iter(())


def _items(session: pytest.Session) -> list[pytest.Item]:
    from conformance.cli.suite import PROTOCOLS, protocol_invariants, scenario_ids

    chosen = session.config.getoption("--groupcheck-protocol")
    protocols = PROTOCOLS if chosen == "all" else (chosen,)
    root = GroupcheckCollector.from_parent(session, name="groupcheck", path=session.path, nodeid="groupcheck")
    items: list[pytest.Item] = []
    for protocol in protocols:
        node = GroupcheckCollector.from_parent(root, name=protocol, path=session.path)
        items.append(
            GroupcheckItem.from_parent(node, name="check", kind="check", protocol=protocol, key="check")
        )
        for inv in protocol_invariants(protocol):
            items.append(
                GroupcheckItem.from_parent(node, name=inv, kind="invariant", protocol=protocol, key=inv)
            )
    scenarios = GroupcheckCollector.from_parent(root, name="scenarios", path=session.path)
    for sid, protocol in scenario_ids():
        if protocol in protocols:
            items.append(
                GroupcheckItem.from_parent(scenarios, name=sid, kind="scenario", protocol=protocol, key=sid)
            )
    return items


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselect, so they select suite items too
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if config.getoption("--groupcheck-target") is None:
        return
    added = _items(session)
    items.extend(added)
    # counted as collected like any item (the terminal's "collected N items", exit 5 when none)
    config.hook.pytest_collectreport(report=pytest.CollectReport("groupcheck", "passed", None, added))


# ---------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def groupcheck(request: pytest.FixtureRequest) -> Any:
    """The suite against the target of --groupcheck-target (model when absent): one API for every target."""
    return _suite(request.config)


@pytest.fixture(scope="session")
def groupcheck_target(groupcheck: Any) -> Any:
    """The target handle (conformance.targets.open.TargetHandle), started once per session."""
    from conformance.errors import ToolError

    try:
        return groupcheck.target
    except ToolError as e:
        pytest.fail(f"--groupcheck-target {groupcheck.spec}: {e}")


@pytest.fixture
def coordinator(groupcheck_target: Any, request: pytest.FixtureRequest) -> Any:
    """A classic coordinator port under test: the in-process model (or mutant), or the real target
    behind the oracle."""
    from conformance.engine.profiles import get_profile
    from conformance.protocols import get_kit
    from conformance.protocols.classic.build import classic_config
    from model.choice import SeededChooser
    from model.classic.coordinator import ClassicCoordinator

    coord = ClassicCoordinator(classic_config(groupcheck_target.model_config, "target"), SeededChooser(0))
    kit = get_kit(PROTOCOL)
    factory, _config, _profile = kit.require("real_setup")(groupcheck_target, get_profile("dev"))
    port = kit.require("model_port")(coord) if factory is None else factory(coord)
    yield port
    close = getattr(port, "close", None)
    if close is not None:
        close()


@pytest.fixture(autouse=True)
def _groupcheck_requires(request: pytest.FixtureRequest) -> None:
    """Skip a test marked ``groupcheck_requires(...)`` when the target lacks a capability."""
    marks = list(request.node.iter_markers("groupcheck_requires"))
    if not marks:
        return
    handle = request.getfixturevalue("groupcheck_target")
    caps = handle.capabilities
    features = caps.features if caps is not None else frozenset({"classic", "consumer", "static_members"})
    for mark in marks:
        for needed in mark.args:
            if needed not in features:
                pytest.skip(f"{handle.name} lacks {needed}")

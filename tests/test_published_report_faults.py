"""The published report (`check --publish`) of a `--protocol all` run: each protocol's section says
what was injected in that run alone, and the header's wall time covers every run, not the first."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from conformance.cli.check import TargetRun
from conformance.engine.profiles import get_profile
from conformance.engine.run import run_check
from conformance.protocols.classic.faults import snapshot, summary
from conformance.reporting.target_report import write_published


def test_each_section_counts_its_own_faults(tmp_path: Path) -> None:
    session = SimpleNamespace(
        wire_drops=0, wire_duplicates=0, wire_cuts=0, wire_delays=0, restarts_done=0,
        resends=0, restart_times=[], restart_signal="kill",
    )  # fmt: skip
    handle = SimpleNamespace(session=session, notes=[], capabilities=None)
    runs = []
    for protocol, drops in (("classic", 4), ("consumer", 1)):
        since = snapshot(session)
        result = run_check(protocol, profile=get_profile("dev"), max_examples=1, seed_value=0)
        session.wire_drops += drops
        runs.append(TargetRun(result, handle, 30.0, [], summary(session, since)))
    out = tmp_path / "model.md"
    write_published(runs, out, "groupcheck check --target model --protocol all", [])
    text = out.read_text()
    assert "(wall time 60 s, the target's start included)" in text
    classic, consumer = text.split("## consumer")
    assert "Injected in this run: 4 answer(s) lost on the wire" in classic
    assert "Injected in this run: 1 answer(s) lost on the wire" in consumer

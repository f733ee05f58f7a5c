"""`check --protocol all` prints one fault line per protocol: each must count only that run's
faults, not the shared session's running total (the three lines used to be identical)."""

from __future__ import annotations

from types import SimpleNamespace

from conformance.protocols.classic.faults import snapshot, summary


def _session() -> SimpleNamespace:
    return SimpleNamespace(
        wire_drops=0,
        wire_duplicates=0,
        wire_cuts=0,
        wire_delays=0,
        restarts_done=0,
        resends=0,
        restart_times=[],
        restart_signal="kill",
    )


def test_summary_since_counts_only_the_later_run() -> None:
    s = _session()
    s.wire_drops, s.restarts_done, s.restart_times = 5, 2, [(0, 1, 12300), (20000, 21000, 32200)]
    first = snapshot(s)
    s.wire_drops += 1
    s.wire_cuts += 3
    s.resends += 1
    line = summary(s, first)
    assert line.startswith(
        "faults: 1 answer(s) lost on the wire, 0 request(s) duplicated, 3 connection(s) cut"
    )
    assert "0 restart(s) (SIGKILL), 1 resend(s)" in line
    assert "12.3" not in line
    total = summary(s)
    assert total.startswith("faults: 6 answer(s) lost") and "2 restart(s) (SIGKILL) (12.3, 12.2 s)" in total


def test_summary_since_names_only_the_later_mixed_restarts() -> None:
    s = _session()
    s.mixed_restart_kinds = ["classic"]
    s.restarts_done, s.restart_times = 1, [(0, 1, 5000)]
    first = snapshot(s)
    s.mixed_restart_kinds.append("consumer")
    s.restarts_done, s.restart_times = 2, [(0, 1, 5000), (9000, 9500, 13000)]
    line = summary(s, first)
    assert "1 restart(s) (SIGKILL) (4 s) (mixed group: consumer)" in line

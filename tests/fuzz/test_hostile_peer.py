"""A hostile peer on loopback: every client of the suite gives up within its deadline with a target
error (exit 2 for the CLI), whatever the peer does (docs/hostile-input.md#network)."""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from collections.abc import Callable

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from conformance.cli.main import main
from conformance.errors import TargetError
from conformance.wire import requests
from conformance.wire.connection import KafkaAdapter, _blocking_exchange
from conformance.wire.proxy import FaultProxy

from .support import FUZZ, MODES, HostilePeer, ScriptedPeer, api_versions_answer, blackhole

SLACK_S = 1.5  # scheduling on a shared machine; the deadlines below are what is asserted
PeerFactory = Callable[..., HostilePeer]


def _bounded(fn: Callable[[], object], limit_s: float, errors: tuple[type[BaseException], ...]) -> str:
    start = time.monotonic()
    with pytest.raises(errors) as info:
        fn()
    took = time.monotonic() - start
    assert took < limit_s + SLACK_S, f"took {took:.1f} s, deadline {limit_s} s"
    return str(info.value)


@pytest.mark.parametrize("mode", MODES)
def test_requests_exchange_has_a_total_deadline(hostile_peer: PeerFactory, mode: str) -> None:
    peer = hostile_peer(mode, drip_s=0.1)
    _bounded(
        lambda: requests.api_versions("127.0.0.1", peer.port, 1.0),
        2.0,  # ApiVersions at v3, then at most one retry at v0
        (requests.WireRetry, requests.WireGarbage),
    )


@pytest.mark.parametrize("mode", MODES)
def test_the_adapter_gives_up_with_a_target_error(hostile_peer: PeerFactory, mode: str) -> None:
    """ApiVersions (at most 1 s here), the no-ApiVersions probe (1 s), FindCoordinator (1 s)."""
    peer = hostile_peer(mode, drip_s=0.1)
    adapter = KafkaAdapter(peer.address, timeout_s=1.0)
    _bounded(lambda: adapter.find_coordinator("g"), 3.0, (TargetError,))


def test_a_byte_drip_of_a_valid_frame_does_not_restart_the_timeout(hostile_peer: PeerFactory) -> None:
    """Each byte comes well within the timeout, the whole answer would take ~6 s: the exchange's
    deadline is the whole answer's."""
    peer = hostile_peer("drip", drip_s=0.15)
    payload = _api_versions_request()
    _bounded(lambda: _blocking_exchange("127.0.0.1", peer.port, payload, 1.0, "t"), 1.0, (TimeoutError,))


def test_an_answer_under_another_correlation_id_is_a_target_error(hostile_peer: PeerFactory) -> None:
    peer = hostile_peer("wrong-id")
    message = _bounded(
        lambda: _blocking_exchange("127.0.0.1", peer.port, _api_versions_request(), 1.0, "t"),
        1.0,
        (TargetError,),
    )
    assert "correlation id" in message


def test_check_against_a_dripping_peer_exits_2_in_bounded_time(
    hostile_peer: PeerFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    peer = hostile_peer("drip", drip_s=0.5)
    start = time.monotonic()
    assert main(["check", "--target", peer.address, "--max-examples", "1"]) == 2
    assert time.monotonic() - start < 6 + 3 + SLACK_S  # ApiVersions 3 s + the probe's 3 s (+ start-up)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and peer.address in err


@pytest.mark.parametrize("mode", ["closed", "hang", "garbage"])
def test_coordlog_on_a_bad_peer_exits_2_with_one_line(
    hostile_peer: PeerFactory, capsys: pytest.CaptureFixture[str], tmp_path: object, mode: str
) -> None:
    pytest.importorskip("confluent_kafka")
    peer = hostile_peer(mode)
    start = time.monotonic()
    assert main(["pipeline", "coordlog", "--bootstrap", peer.address, "--out", str(tmp_path)]) == 2
    assert time.monotonic() - start < 10 + SLACK_S  # the probe: 5 s, and 5 s more for a v0 retry
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and peer.address in err


def test_the_fault_proxy_loop_never_waits_on_an_upstream_connect(hostile_peer: PeerFactory) -> None:
    """A connection to an upstream whose connect hangs is refused after the proxy's connect
    timeout; meanwhile another connection through the same proxy is served at once."""
    srv, fillers, hole = blackhole()
    good = hostile_peer("valid")
    proxy = FaultProxy(connect_timeout_s=1.0)
    try:
        stuck_at = proxy.route(("127.0.0.1", int(hole.rsplit(":", 1)[1])))
        fine_at = proxy.route(("127.0.0.1", good.port))
        stuck = socket.create_connection(stuck_at, timeout=2)
        stuck.sendall(_frame(_api_versions_request()))
        start = time.monotonic()
        frame = _blocking_exchange(fine_at[0], fine_at[1], _api_versions_request(), 2.0, "t")
        assert frame and time.monotonic() - start < 0.5 + SLACK_S
        stuck.settimeout(1.0 + SLACK_S + 1)
        assert stuck.recv(1) == b""  # closed once the upstream connect timed out
        assert any(e.kind == "upstream-refused" and "timed out" in e.detail for e in proxy.take_events())
    finally:
        proxy.close()
        for s in (stuck, srv, *fillers):
            with contextlib.suppress(OSError, UnboundLocalError):
                s.close()


# ---------------------------------------------------------------------------------- properties
_answer = st.fixed_dictionaries(
    {
        "base": st.sampled_from(["valid", "random"]),
        "corr_delta": st.sampled_from([0, 0, 0, 1, -1, 2**31]),
        "cut": st.one_of(st.none(), st.integers(0, 60)),
        "flips": st.lists(st.tuples(st.integers(0, 60), st.integers(0, 255)), max_size=3),
        "noise": st.binary(max_size=64),
        "size": st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
        "chunks": st.lists(st.integers(1, 16), min_size=1, max_size=8),
        "delay": st.sampled_from([0.0, 0.0, 0.02, 0.1]),
        "then": st.sampled_from(["close", "hang", "reset"]),
    }
)


def _script(spec: dict[str, object]) -> Callable[[int, int, int], list[tuple[bytes, float]]]:
    def script(api: int, version: int, corr: int) -> list[tuple[bytes, float]]:
        corr_id = (corr + int(spec["corr_delta"])) & 0x7FFFFFFF  # type: ignore[call-overload]
        data = bytearray(
            api_versions_answer(corr_id, version) if spec["base"] == "valid" else bytes(spec["noise"])
        )  # type: ignore[arg-type]
        if spec["size"] is not None and len(data) >= 4:
            data[0:4] = struct.pack(">i", spec["size"])
        for pos, byte in spec["flips"]:  # type: ignore[attr-defined]
            if pos < len(data):
                data[pos] = byte
        if spec["cut"] is not None:
            data = data[: spec["cut"]]
        out, at = [], 0
        for n in spec["chunks"]:  # type: ignore[attr-defined]
            out.append((bytes(data[at : at + n]), float(spec["delay"])))  # type: ignore[arg-type]
            at += n
        out.append((bytes(data[at:]), 0.0))
        return out

    return script


@FUZZ
@given(_answer)
def test_any_answer_is_a_frame_or_a_wire_error_within_the_deadline(spec: dict[str, object]) -> None:
    peer = ScriptedPeer(_script(spec), str(spec["then"]))
    try:
        start = time.monotonic()
        try:
            requests.exchange("127.0.0.1", peer.port, _api_versions_request(), 0.3)
            event("exchange: a frame")
        except (requests.WireRetry, requests.WireGarbage) as exc:
            event(f"exchange: {type(exc).__name__}")
        assert time.monotonic() - start < 0.3 + SLACK_S
        start = time.monotonic()
        with contextlib.suppress(TargetError, OSError):
            _blocking_exchange("127.0.0.1", peer.port, _api_versions_request(), 0.3, "t")
        assert time.monotonic() - start < 0.3 + SLACK_S
    finally:
        peer.close()


def _api_versions_request() -> object:
    from conformance.wire.codec import API_API_VERSIONS, build, payload_class

    return build(payload_class(API_API_VERSIONS, 0, True), {})


def _frame(payload: object) -> bytes:
    from conformance.wire.framing import encode_frame

    return encode_frame(payload, 1, "t")[4:]

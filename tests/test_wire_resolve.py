"""A host name lookup cannot hold a run: `getaddrinfo` has no deadline of its own."""

from __future__ import annotations

import socket
import threading

import pytest

from conformance.errors import TargetError
from conformance.wire import dial, requests
from conformance.wire.codec import API_API_VERSIONS, build, payload_class
from conformance.wire.connection import KafkaAdapter


@pytest.fixture
def hung_lookup(monkeypatch):
    release = threading.Event()
    calls: list[str] = []

    def never(host, port, *args, **kwargs):
        calls.append(host)
        release.wait(30)
        raise socket.gaierror("released")

    monkeypatch.setattr(socket, "getaddrinfo", never)
    yield calls
    release.set()


def test_a_hung_lookup_ends_at_its_deadline(hung_lookup):
    with pytest.raises(socket.gaierror, match="did not resolve within 0.2 s"):
        dial.resolve(("broker.example", 9092), 0.2)
    assert hung_lookup == ["broker.example"]


def test_numeric_addresses_are_not_looked_up(hung_lookup):
    assert dial.resolve(("127.0.0.1", 9092), 0.2) == ("127.0.0.1", 9092)
    assert dial.resolve(("::1", 9092), 0.2) == ("::1", 9092)
    assert hung_lookup == []


def test_a_failed_lookup_keeps_its_reason(monkeypatch):
    def refuse(host, port, *args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    with pytest.raises(socket.gaierror, match="not known"):
        dial.resolve(("nowhere.invalid", 1), 1.0)


def test_every_exchange_bounds_its_lookup(hung_lookup):
    with pytest.raises(requests.WireRetry, match="did not resolve"):
        requests.exchange("broker.example", 9092, build(payload_class(API_API_VERSIONS, 0, True), {}), 0.2)
    adapter = KafkaAdapter("broker.example:9092", timeout_s=0.2)
    with pytest.raises(TargetError, match="cannot resolve host"):
        adapter.connect()

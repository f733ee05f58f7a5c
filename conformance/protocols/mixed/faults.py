"""Wire faults inside a mixed group on a real coordinator, through the fault proxy (docs/faults.md; docs/protocol-reference.md#b13).

The mixed oracle (`mixed/oracle.py`) sends one request and waits for its answer, as
the KIP-848 oracle does, so the consumer oracle's wire-fault port (`consumer_faults.faulty_port_class`)
serves it unchanged over a different base: the same proxy commands for a lost answer (the target
applies the request, the proxy swallows the answer and hands it to the oracle, which judges it),
a cut connection (the same, then both sides closed), a duplicate (the copy written right behind
the original under a correlation id of its own, its answer judged against the model's answer to
the copy) and a held request (released at the simulator's moment). Only the hooks differ: a
classic member's request is encoded and decoded by the classic codec with real topic names
(`mixed/codec.py`), and a copy or a release goes through `exchange`.

What the members do is the model's (`model.mixed.world.MixedRun`): a member that loses an
answer takes the disconnect path, a held request reaches the target before its member's leave, at
its crash and before a restart. `RealMixedRun` (`mixed_realtime`) calls `copy_exchange`,
`hold_request` and `release_request` below.
"""

from __future__ import annotations

from typing import Any


def wire_fault_port_class() -> type[Any]:
    """`MixedOraclePort` with the consumer oracle's wire-fault machinery (`consumer_faults`)."""
    from conformance.protocols.consumer.faults import Swallowed, faulty_port_class
    from conformance.protocols.mixed.oracle import MixedOraclePort

    base: type[Any] = faulty_port_class(MixedOraclePort)

    class WireFaultMixedPort(base):  # type: ignore[misc, valid-type]
        """The mixed oracle port the real mixed run can tell a wire fault (`wire_fault`), hand a
        request to hold and release, and ask for a duplicate's copy."""

        # ---------------------------------------------------------- what RealMixedRun calls
        def copy_exchange(self, member: str, request: Any, ref: int) -> Any:
            """The copy of a duplicated request (applied by the target right after the original)."""
            self.current_member = member
            return self.heartbeat_copy(request, ref, self.clock())

        def hold_request(self, member: str, request: Any, ref: int) -> None:
            self.current_member = member
            self.hold(request, ref, self.clock())

        def release_request(self, member: str, request: Any, ref: int) -> Any:
            self.current_member = member
            return self.release(request, ref, self.clock())

        # ---------------------------------------------------------- consumer_faults hooks
        def _resend(self, request: Any, ref: int, now: int) -> Any:
            return self.exchange(self.current_member, request, ref)

        def _hold_payload(self, request: Any) -> Any:
            return self._encode(request)[2]

        def _decode_value(self, want: Swallowed, value: Any) -> Any:
            request, version = self._pending
            return self._decode(request, version, value)

    return WireFaultMixedPort

"""Member ids of the KIP-848 protocol (docs/protocol-reference.md#b9, KIP-1082).

Kafka renders a `Uuid` as 22 characters of URL-safe base64 without padding and never hands out
an id starting with '-' (`clients/.../common/Uuid.java`; `AbstractMembershipManager.java` L86 for
the consumer, GMM L1683 for the coordinator's v0 ids). The model draws the 128 bits from the
Chooser, so an oracle chooser can adopt the id a real coordinator generated.
"""

from __future__ import annotations

import base64
import binascii
import uuid

from model.choice import Chooser

_RESERVED = (bytes(16), bytes(15) + b"\x01")  # Uuid.ZERO_UUID, Uuid.ONE_UUID (metadata topic id)


def kafka_uuid_string(canonical: str) -> str:
    """Kafka's string form (URL-safe base64, no padding) of a canonical ``xxxxxxxx-xxxx-...`` UUID."""
    return base64.urlsafe_b64encode(uuid.UUID(canonical).bytes).rstrip(b"=").decode("ascii")


def new_member_id(chooser: Chooser) -> str:
    """A fresh member id as Kafka's `Uuid.randomUuid().toString()` would produce it."""
    while True:
        raw = uuid.UUID(chooser.new_uuid()).bytes
        text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
        if raw not in _RESERVED and not text.startswith("-"):
            return text


def is_valid_member_uuid(member_id: str) -> bool:
    """KIP-1082's proposed server-side check ("the server will validate that a valid UUID is provided").

    The KIP does not fix the string form; the model accepts Kafka's base64 form (22 URL-safe
    characters decoding to 16 bytes) and the canonical hyphenated form, rejecting the reserved
    zero and one UUIDs.
    """
    raw: bytes | None = None
    if len(member_id) == 22:
        try:
            raw = base64.urlsafe_b64decode(member_id + "==")
        except (binascii.Error, ValueError):
            raw = None
        if raw is not None and (
            len(raw) != 16 or base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != member_id
        ):
            raw = None
    elif len(member_id) == 36:
        try:
            raw = uuid.UUID(member_id).bytes
        except ValueError:
            raw = None
        if raw is not None and str(uuid.UUID(bytes=raw)) != member_id.lower():
            raw = None
    return raw is not None and raw not in _RESERVED

"""The harness answers, decoded strictly, and the observation the client invariants judge.

Protocol (conformance/clients/protocol.md): one JSON object per line each way. An answer line is at
most MAX_ANSWER bytes, its keys come from a fixed set, its id is the request's, and every field is
type- and range-checked; anything else is a tool error naming the field.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from conformance.clients.inputs import rebalance_protocol
from conformance.errors import TargetError
from model.assignors.invariants import AssignmentObservation
from model.embedded import Assignment, Subscription, TopicPartition
from model.invariants import Invariant, for_protocol, load_all

MAX_ANSWER = 4 << 20
MAX_MEMBERS = 64
MAX_TOPICS = 64
MAX_PARTITIONS = 4096
MAX_USER_DATA = 1 << 16
MAX_TEXT = 2000
INT32 = (-(2**31), 2**31 - 1)

_ANSWER_KEYS = {"id", "ok", "subscriptions", "assignment", "error", "bad_request", "unavailable"}
_SEEN_KEYS = {"member_id", "topics", "user_data", "owned", "generation"}
_HELLO_KEYS = {"hello", "library", "version", "api"}


class AnswerError(TargetError):
    """A harness answer that breaks the protocol (a tool error: the library was not judged)."""


@dataclass(frozen=True)
class Answer:
    """A decoded answer: either the leader's view and assignment, or why there is none."""

    subscriptions: dict[str, Subscription]
    assignment: dict[str, Assignment]
    ok: bool
    error: str = ""
    unavailable: str = ""


def decode_line(raw: bytes, what: str) -> dict[str, Any]:
    if len(raw) > MAX_ANSWER:
        raise AnswerError(f"{what}: longer than {MAX_ANSWER} bytes")
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as e:
        raise AnswerError(f"{what}: not a JSON line ({e})") from None
    if not isinstance(value, dict):
        raise AnswerError(f"{what}: not a JSON object")
    return value


def _no_constant(name: str) -> None:
    raise ValueError(f"non-standard constant {name}")


def _text(value: Any, field: str, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise AnswerError(f"answer field {field}: expected a string of at most {limit} characters")
    return value


def _int(value: Any, field: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise AnswerError(f"answer field {field}: expected an integer in [{lo}, {hi}]")
    return value


def _list(value: Any, field: str, limit: int) -> list[Any]:
    if not isinstance(value, list) or len(value) > limit:
        raise AnswerError(f"answer field {field}: expected an array of at most {limit} items")
    return value


def _partitions(value: Any, field: str) -> tuple[TopicPartition, ...]:
    out = []
    for item in _list(value, field, MAX_PARTITIONS):
        pair = _list(item, field, 2)
        if len(pair) != 2:
            raise AnswerError(f"answer field {field}: each entry is [topic, partition]")
        out.append((_text(pair[0], f"{field}.topic", 249), _int(pair[1], f"{field}.partition", 0, INT32[1])))
    return tuple(out)


def decode_hello(line: dict[str, Any], library: str) -> str:
    """The harness's first line: names the library and the version it really loaded."""
    if set(line) != _HELLO_KEYS or line.get("hello") != "groupcheck-assignor-harness":
        raise AnswerError(f"harness hello line has keys {sorted(line)}, expected {sorted(_HELLO_KEYS)}")
    if line["library"] != library:
        raise AnswerError(f"harness says it runs {line['library']!r}, expected {library!r}")
    return _text(line["version"], "version", 64)


def decode_answer(line: dict[str, Any], request: dict[str, Any]) -> Answer:
    """An answer to `request`, checked field by field; the harness refusing our request is a tool error."""
    unknown = set(line) - _ANSWER_KEYS
    if unknown:
        raise AnswerError(f"answer has unknown field(s) {sorted(unknown)}")
    if line.get("id") != request["id"]:
        raise AnswerError(f"answer id {line.get('id')!r} does not match request id {request['id']}")
    if not isinstance(line.get("ok"), bool):
        raise AnswerError("answer field ok: expected true or false")
    if "bad_request" in line:
        raise AnswerError(f"the harness refused the request: {_text(line['bad_request'], 'bad_request')}")
    if not line["ok"]:
        error = _text(line.get("error", ""), "error")
        unavailable = _text(line.get("unavailable", ""), "unavailable")
        if bool(error) == bool(unavailable):
            raise AnswerError("a failed answer carries exactly one of error, unavailable")
        seen = _subscriptions(line["subscriptions"], request) if "subscriptions" in line else {}
        return Answer(seen, {}, False, error, unavailable)
    if "error" in line or "unavailable" in line:
        raise AnswerError("an ok answer carries no error")
    seen = _subscriptions(line.get("subscriptions"), request)
    raw = line.get("assignment")
    if not isinstance(raw, dict) or len(raw) > MAX_MEMBERS:
        raise AnswerError(f"answer field assignment: expected an object of at most {MAX_MEMBERS} members")
    assignment = {
        _text(m, "assignment member", 256): Assignment(_partitions(ps, f"assignment.{m}"))
        for m, ps in raw.items()
    }
    return Answer(seen, assignment, True)


def _subscriptions(value: Any, request: dict[str, Any]) -> dict[str, Subscription]:
    """What the leader's assign() received, one entry per requested member, in the leader's order."""
    wanted = {m["member_id"]: m for m in request["members"]}
    out: dict[str, Subscription] = {}
    for i, item in enumerate(_list(value, "subscriptions", MAX_MEMBERS)):
        where = f"subscriptions[{i}]"
        if not isinstance(item, dict) or set(item) != _SEEN_KEYS:
            raise AnswerError(f"answer field {where}: expected keys {sorted(_SEEN_KEYS)}")
        member = _text(item["member_id"], f"{where}.member_id", 256)
        if member not in wanted or member in out:
            raise AnswerError(f"answer field {where}.member_id: {member!r} unknown or repeated")
        topics = tuple(
            _text(t, f"{where}.topics", 249) for t in _list(item["topics"], f"{where}.topics", MAX_TOPICS)
        )
        if sorted(topics) != sorted(wanted[member]["topics"]):
            raise AnswerError(f"answer field {where}.topics: {list(topics)} is not what was sent")
        user_data = None
        if item["user_data"] is not None:
            text = _text(item["user_data"], f"{where}.user_data", 4 * MAX_USER_DATA // 3 + 4)
            try:
                user_data = base64.b64decode(text, validate=True)
            except (binascii.Error, ValueError):
                raise AnswerError(f"answer field {where}.user_data: not base64") from None
        owned = _partitions(item["owned"], f"{where}.owned")
        generation = _int(item["generation"], f"{where}.generation", -1, INT32[1])
        out[member] = Subscription(topics, user_data, owned, generation)
    if set(out) != set(wanted):
        raise AnswerError(f"answer field subscriptions: members {sorted(out)} are not those sent")
    return out


def client_invariants() -> list[Invariant]:
    """The `client.*` invariants of the model (model/assignors/invariants.py), in id order."""
    load_all()
    return for_protocol("client")


def observation(request: dict[str, Any], answer: Answer) -> AssignmentObservation:
    """The leader's inputs as it decoded them and its output, under the assignor's rebalance protocol."""
    assignor = request["assignor"]
    return AssignmentObservation(
        dict(request["partitions"]),
        answer.subscriptions,
        answer.assignment,
        rebalance_protocol(assignor),
        assignor,
    )


def judge(request: dict[str, Any], answer: Answer) -> list[tuple[str, str]]:
    """(invariant id, message) for every client invariant the answer violates."""
    obs = observation(request, answer)
    return [(inv.id, msg) for inv in client_invariants() for msg in inv.check(obs)]

"""Bounds on what a trace asks a replay to do (docs/hostile-input.md).

A step's action drives the simulator: ``advance`` and ``run_for`` move virtual time, a consumer
``settle`` loops ``bound_ms / tick_ms`` times, ``create_topic`` builds ``partitions`` partitions. A
trace file is input like any other, so these numbers are checked before anything runs: each known
field is an integer within its range, and the loop iterations of the whole trace (ticks of mixed
runs and consumer settles) stay within `strict.MAX_TICKS`.
"""

from __future__ import annotations

from typing import Any

from conformance import strict
from conformance.strict import Malformed

#: action field -> (lowest, highest) value
ACTION_BOUNDS: dict[str, tuple[int, int]] = {
    "ms": (0, strict.MAX_VIRTUAL_MS),
    "bound_ms": (0, strict.MAX_VIRTUAL_MS),
    "tick_ms": (strict.MIN_EVERY_MS, strict.MAX_TICK_MS),
    "extra_rounds": (0, 100),
    "partitions": (0, strict.MAX_PARTITIONS),  # 0: the op deletes the topic
    "partition": (0, strict.MAX_PARTITIONS),
    "offset": (-1, strict.INT_MAX),
    "session_timeout_ms": (0, strict.MAX_TIMEOUT_MS),
    "rebalance_timeout_ms": (0, strict.MAX_TIMEOUT_MS),
    "join_version": (0, 9),
}


#: action field -> the JSON types it may hold ("str[]": a list of strings); the simulators' ops
#: take these as they are, so a list where a client name belongs must stop here
ACTION_TYPES: dict[str, tuple[str, ...]] = {
    "op": ("str",), "client": ("str",), "topic": ("str",), "name": ("str",), "action": ("str",),
    "group_id": ("str",), "member_id": ("str",), "instance_id": ("str", "null"), "assignor": ("str", "null"),
    "assignors": ("str[]",), "topics": ("str[]", "null"), "owned": ("list", "null"), "request": ("dict",),
    "slow": ("bool",), "stalled": ("bool",), "delta": ("int",), "member_epoch": ("int",),
}  # fmt: skip
_KINDS = {"str": str, "list": list, "dict": dict, "bool": bool, "null": type(None)}


def _fits(value: Any, kinds: tuple[str, ...]) -> bool:
    for kind in kinds:
        if kind == "str[]" and isinstance(value, list) and all(isinstance(v, str) for v in value):
            return True
        if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if kind in _KINDS and type(value) is _KINDS[kind]:
            return True
    return False


def check_action(action: dict[str, Any]) -> None:
    """Each known field of ``action`` has its type, and each bounded one is an integer within its
    range (Malformed names the field)."""
    for name, kinds in ACTION_TYPES.items():
        if name in action and not _fits(action[name], kinds):
            raise Malformed(
                f"expected {' or '.join(kinds)}, got {type(action[name]).__name__}", f"action.{name}"
            )
    for name, (lo, hi) in ACTION_BOUNDS.items():
        if name not in action:
            continue
        value = action[name]
        if not isinstance(value, int) or isinstance(value, bool):
            raise Malformed(f"expected an integer, got {type(value).__name__}", f"action.{name}")
        if not lo <= value <= hi:
            raise Malformed(f"{value} is out of range ({lo}..{hi})", f"action.{name}")


def ticks(protocol: str, setup: dict[str, Any], action: dict[str, Any]) -> int:
    """Loop iterations replaying ``action`` costs: a mixed ``run_for`` ticks every ``tick_ms`` of the
    set-up, a consumer ``settle`` every ``tick_ms`` of its own."""
    op = action.get("op")
    if protocol == "mixed" and op == "run_for":
        tick = setup.get("tick_ms", 1000)
        return -(-int(action.get("ms", 0)) // max(int(tick), 1))
    if op == "settle" and "bound_ms" in action:
        return -(-int(action["bound_ms"]) // max(int(action.get("tick_ms", 250)), 1))
    return 0


def check_state(state: Any) -> None:
    """A step's ``state`` summary has the shape its readers (`show`) rely on: ``clients`` maps
    names to views whose ``member_id`` is a string, ``group`` is a mapping with a string ``state``
    beside its ``generation`` and a string ``leader``, ``groups`` maps ids to mappings."""
    if state is None:
        return
    clients, group, groups = state.get("clients"), state.get("group"), state.get("groups")
    if clients is not None:
        if not isinstance(clients, dict) or not all(isinstance(v, dict) for v in clients.values()):
            raise Malformed("expected a mapping of client name -> mapping", "state.clients")
        if not all(isinstance(v.get("member_id"), str | None) for v in clients.values()):
            raise Malformed("member_id must be a string", "state.clients")
    if group is not None:
        if not isinstance(group, dict):
            raise Malformed("expected a mapping", "state.group")
        if "generation" in group and not isinstance(group.get("state"), str):
            raise Malformed("a group with a generation needs a string 'state'", "state.group")
        if not isinstance(group.get("leader"), str | None):
            raise Malformed("leader must be a string", "state.group")
    if groups is not None and (
        not isinstance(groups, dict) or not all(isinstance(g, dict) for g in groups.values())
    ):
        raise Malformed("expected a mapping of group id -> mapping", "state.groups")


REGEX_FIELDS = ("subscribed_topic_regex", "regex")


def check_regexes(value: Any, field: str) -> None:
    """Every topic regex in ``value`` (a request or action as decoded JSON) is of the safe shape
    (`strict.check_regex`): the model matches it with a backtracking engine."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, v in item.items():
                if key in REGEX_FIELDS and isinstance(v, str):
                    try:
                        strict.check_regex(v)
                    except Malformed as exc:
                        raise Malformed(exc.reason, f"{field}: {key}") from None
                stack.append(v)
        elif isinstance(item, list):
            stack.extend(item)

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

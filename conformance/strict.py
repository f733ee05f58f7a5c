"""Strict decoding of every file groupcheck reads (docs/hostile-input.md).

Traces, trace headers, counterexamples, the invariant catalogue and scenarios all go through the
same discipline: the text is read with a size limit and must be UTF-8; JSON and YAML are parsed with
bounded nesting (`MAX_DEPTH`), integers within signed 64 bits, no NaN or Infinity, no YAML aliases
(their expansion is unbounded) and no duplicate keys; the result is then checked against a JSON
Schema of `specs/schemas/` (`conformance.schema_check`). Every failure is a tool error whose
message starts with ``file:line`` and names the field, so the CLI exits 2 with one line.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from conformance.errors import ToolError

MAX_DEPTH = 64  # nesting of arrays and objects (mappings and sequences in YAML)
INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # a Kafka field is at most a signed 64-bit integer
MAX_INT_CHARS = 24  # digits (and sign, underscores) of an integer literal before it is converted
MAX_YAML_BYTES = 1024 * 1024
MAX_YAML_NODES = 100_000

# Bounds of the values that drive loops (the schemas of specs/schemas/ carry them too).
MAX_VIRTUAL_MS = 3_600_000  # virtual time one step or op may cover (an hour)
MIN_EVERY_MS = 10  # the shortest tick of a `run_for` loop or of a mixed run (`tick_ms`)
MAX_TICK_MS = 60_000
MAX_TICKS = 5_000  # loop iterations (ticks) a whole scenario or replayed trace may ask for (a mixed
# replay tick costs about 3 ms: 5,000 ticks is ~15 s; recorded traces and scenarios use under 100)
MAX_PARTITIONS = 1024  # per topic
MAX_TOPICS = 64
MAX_CLIENTS = 64
MAX_STEPS = 10_000  # steps of one scenario
MAX_TIMEOUT_MS = 2**31 - 1  # Kafka's timeouts are int32 milliseconds


class Malformed(ValueError):
    """A value that breaks the discipline; the caller adds file:line (``field`` is a path, or '')."""

    def __init__(self, reason: str, field: str = "", path: tuple[Any, ...] = ()) -> None:
        super().__init__(reason)
        self.reason, self.field, self.path = reason, field, path

    def at(self, where: str) -> str:
        return f"{where}: {self.field}: {self.reason}" if self.field else f"{where}: {self.reason}"


# ---------------------------------------------------------------------------------- text
def read_bytes(path: Path, limit: int, error: type[ToolError] = ToolError) -> bytes:
    """The file's bytes, at most ``limit`` of them (a larger file is an error, not truncated)."""
    try:
        with path.open("rb") as f:
            raw = f.read(limit + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise error(f"{path}: larger than {limit} bytes (the limit for this kind of file)")
    return raw


def utf8(raw: bytes, path: Path | str, error: type[ToolError] = ToolError) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(f"{path}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x})") from None


def short(value: Any, limit: int = 60) -> str:
    """A value for an error message: its repr, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------- JSON
def _int(text: str) -> int:
    if len(text) > MAX_INT_CHARS:
        raise Malformed(f"an integer of {len(text)} digits (limit: signed 64-bit)")
    value = int(text)
    if not INT_MIN <= value <= INT_MAX:
        raise Malformed(f"integer {value} outside the signed 64-bit range")
    return value


def _float(text: str) -> float:
    if len(text) > 64:
        raise Malformed(f"a number of {len(text)} characters")
    value = float(text)
    if not math.isfinite(value):
        raise Malformed(f"number {text[:30]} is not finite")
    return value


def _constant(text: str) -> Any:
    raise Malformed(f"{text} is not JSON")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise Malformed(f"duplicate key {short(dup)}")
    return out


def json_value(text: str) -> Any:
    """One JSON value under the discipline (Malformed says why not)."""
    try:
        value = json.loads(
            text, parse_int=_int, parse_float=_float, parse_constant=_constant, object_pairs_hook=_object
        )
    except RecursionError:
        raise Malformed(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise Malformed(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    except Malformed:
        raise
    except (ValueError, TypeError) as exc:
        raise Malformed(f"invalid JSON: {str(exc)[:100]}") from None
    check_tree(value)
    return value


def check_tree(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Nesting depth, integer range and well-formed (surrogate-free) strings of a decoded value."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                raise Malformed(f"nested deeper than {max_depth} levels")
            if isinstance(item, dict):
                stack.extend((k, depth) for k in item)
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    raise Malformed("a string with an unpaired surrogate (\\ud800-\\udfff)") from None
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int) and not INT_MIN <= item <= INT_MAX:
            raise Malformed("integer outside the signed 64-bit range")
        elif isinstance(item, float) and not math.isfinite(item):
            raise Malformed("a number that is not finite")


# ---------------------------------------------------------------------------------- YAML
class _Loader(yaml.SafeLoader):
    """The safe loader with bounds: no aliases, bounded depth and node count, no duplicate keys,
    integers within signed 64 bits, finite floats."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._nodes = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed here", mark)
        self._nodes += 1
        self._depth += 1
        if self._nodes > MAX_YAML_NODES or self._depth > MAX_DEPTH:
            mark = self.peek_event().start_mark
            what = f"nested deeper than {MAX_DEPTH} levels" if self._depth > MAX_DEPTH else "too many nodes"
            raise yaml.composer.ComposerError(None, None, what, mark)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[str] = set()
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {short(key.value)}", key.start_mark
                    )
                seen.add(key.value)
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node: Any) -> int:
        text = str(node.value)
        if len(text) > MAX_INT_CHARS:
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of {len(text)} digits (limit: signed 64-bit)", node.start_mark
            )
        value = int(super().construct_yaml_int(node))
        if not INT_MIN <= value <= INT_MAX:
            raise yaml.constructor.ConstructorError(
                None, None, "integer outside the signed 64-bit range", node.start_mark
            )
        return value

    def construct_yaml_float(self, node: Any) -> float:
        value = float(super().construct_yaml_float(node))
        if not math.isfinite(value):
            raise yaml.constructor.ConstructorError(
                None, None, "a number that is not finite", node.start_mark
            )
        return value


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_yaml_float)


def yaml_document(path: Path, error: type[ToolError] = ToolError) -> tuple[Any, Any]:
    """(data, node) of a YAML file under the discipline; the node gives each value's line."""
    text = utf8(read_bytes(path, MAX_YAML_BYTES, error), path, error)
    loader: _Loader | None = None
    try:
        loader = _Loader(text)
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (control characters)
        line = text[: exc.position].count("\n") + 1
        raise error(f"{path}:{line}: invalid YAML: character 0x{exc.character:02x} is not allowed") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else f"{path}:1"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"{where}: invalid YAML: {problem}") from None
    except RecursionError:
        raise error(f"{path}:1: invalid YAML: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # a constructor's own conversion (dates, base64) of a bad scalar
        raise error(f"{path}:1: invalid YAML: {str(exc)[:100]}") from None
    finally:
        if loader is not None:
            loader.dispose()
    return data, node


def node_line(node: Any, path: Any) -> int:
    """1-based line of the value at ``path`` (keys and indices) in a composed YAML node; the line of
    the deepest part of the path that exists."""
    if node is None:
        return 1
    line = node.start_mark.line + 1
    for key in path:
        if isinstance(node, yaml.MappingNode):
            match = [v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(key)]
            if not match:
                return line
            node = match[0]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
            node = node.value[key]
        else:
            return line
        line = node.start_mark.line + 1
    return line


def field_path(path: Any) -> str:
    """``steps[3].run_for.every`` for the path (keys and indices) of a value."""
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


# ---------------------------------------------------------------------------------- regexes
MAX_REGEX = 64
#: The shape of a topic regex the model may be asked to match (Python's ``re`` backtracks, Kafka's
#: RE2J does not): no groups with a quantifier after them, no back-references or look-arounds,
#: at most two quantifiers, so matching a topic name stays polynomial and small.
SAFE_REGEX = r"^(?!.*\)[*+?{])(?!.*\(\?)(?!.*\\[1-9])[^*+?{]*([*+?{][^*+?{]*){0,2}$"


def check_regex(text: str) -> None:
    """Malformed unless ``text`` is a topic regex of the safe shape (`SAFE_REGEX`)."""
    import re

    if len(text) > MAX_REGEX or re.match(SAFE_REGEX, text, re.S) is None:
        raise Malformed(
            f"regex {short(text, 40)} is not of the safe shape (at most {MAX_REGEX} characters, two "
            "quantifiers, no quantified group, back-reference or look-around)"
        )


# ---------------------------------------------------------------------------------- command line
#: option -> (lowest, highest); the parsers name their options' ranges from here
RANGES: dict[str, tuple[float, float]] = {
    "max_examples": (1, 1_000_000),
    "restarts": (0, 1000),
    "depth": (0, 1000),
    "perturbations": (0, 100),
    "static": (0, 4),
    "workers": (1, 16),
    "members": (1, 64),
    "partitions": (1, 1024),
    "budget": (0.001, 7 * 24 * 3600.0),
    "seed": (-(2**63), 2**63 - 1),
    "runs": (1, 10_000_000),
    "steps": (1, 100_000),
    "pace": (0.0, 3600.0),
    "max_counterexamples": (0, 100_000),
    "max_findings": (0, 100_000),
    "groups": (1, 256),
    "ownerless_bound_ms": (0, 3_600_000),
}


def integer(name: str) -> Callable[[str], int]:
    """An argparse type: an integer within ``RANGES[name]``."""
    lo, hi = RANGES[name]

    def parse(text: str) -> int:
        try:
            value = int(text) if len(text) <= 24 else None
        except ValueError:
            value = None
        if value is None:
            raise argparse.ArgumentTypeError(f"{text[:30]!r} is not an integer")
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is out of range ({int(lo)}..{int(hi)})")
        return value

    return parse


def number(name: str) -> Callable[[str], float]:
    """An argparse type: a finite number within ``RANGES[name]`` (no nan, no inf)."""
    lo, hi = RANGES[name]

    def parse(text: str) -> float:
        try:
            value = float(text) if len(text) <= 32 else math.nan
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:30]!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text[:30]!r} is not a finite number")
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value:g} is out of range ({lo:g}..{hi:g})")
        return value

    return parse

"""Every divergence of a run, not the first: signatures, counts and the smallest trace of each.

With ``--keep-going`` a violation does not end the run: the machine records it here
(`DivergenceLog.record`), the oracle takes the target's answer as a known deviation of this
example (docs/keep-going.md), and the run goes on. Occurrences are grouped by *signature*: the
rule, the request and answer shapes and the error codes, with every clock value, member id,
reference and hypothesis count removed, so the same deviation met at another moment, by another
member or on another group counts once. Each signature keeps its count, where it was first seen
and the trace of its smallest occurrence (fewest steps; untainted before tainted).

An occurrence met after an earlier one of the same example was adopted is *tainted*: the model
state it was judged against already contains a deviation the model does not allow.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: the request an oracle finding names ("c2 sends Heartbeat v0 (ref 2)"), or "time passes"
_SENDS = re.compile(r"sends ([A-Z][A-Za-z]+)|(time passes)")
#: where an oracle finding lists why each hypothesis fails ("... (2 tried): why | why")
_TRIED = re.compile(r"\(\d+ tried\): ")
#: the answer a reason is about ("ref 2 (c2 Heartbeat v0): ...")
_REF = re.compile(r"^ref \d+ \(\S+ ([A-Z][A-Za-z]+) v\d+\): ")
#: an error code the target answered where the model's differs ("error REBALANCE_IN_PROGRESS, model X")
_ERROR = re.compile(r"error ([A-Z][A-Z_]+), model ([A-Z][A-Z_]+)")
#: another field that differs ("member epoch 5, model 4", "generation_id 4, model 2")
_FIELD = re.compile(r"([a-z][a-z_]*) [^\s,;|]+, model ")
#: what is left of a message once values are gone: Kafka names and words, no numbers or ids
#: (a value never ends on "." or ":": that is the sentence's, "for OMks...nJ2bQ: no legal completion")
_VALUE = re.compile(r"[A-Za-z0-9]*[0-9](?:[A-Za-z0-9._:#-]*[A-Za-z0-9#_-])?|\{[^}]*\}|\[[^\]]*\]|'[^']*'")
_SPACE = re.compile(r"\s+")
#: a value cut in two by the patterns above ("ab#cd" -> "##") is one value
_HASHES = re.compile(r"#+")
#: at most this much of a normalised message goes into a signature
SHAPE_CHARS = 160


#: an opaque id without digits (a base64 member id such as "OMksVyFcSNqv_mZm-"): mixed case and a
#: "_" or "-", ten characters or more
_OPAQUE = re.compile(r"(?=[A-Za-z_-]*[a-z])(?=[A-Za-z_-]*[A-Z])(?=[A-Za-z_-]*[_-])[A-Za-z_-]{10,}")
#: a Kafka `Uuid` as its toString prints it (22 base64url characters, the KIP-848 member id) that
#: happens to hold no digit, "_" or "-": a mixed-case word that is not CamelCase
#: ("ConsumerGroupHeartbeat" is 22 letters too and stays)
_UUID = re.compile(
    r"(?<![A-Za-z0-9_-])(?!(?:[A-Z][a-z]+)+(?![A-Za-z0-9_-]))(?=[A-Za-z]*[a-z])(?=[A-Za-z]*[A-Z])[A-Za-z]{22}(?![A-Za-z0-9_-])"
)


def _shape(text: str) -> str:
    shape = _VALUE.sub("#", _OPAQUE.sub("#", _UUID.sub("#", text)))
    return _SPACE.sub(" ", _HASHES.sub("#", shape)).strip()[:SHAPE_CHARS]


def signature(rule: str, message: str) -> str:
    """The rule with the shape of what diverged. An oracle finding is named by the request whose
    answer the first hypothesis' reason is about (else the request sent, or "time passes") and by
    that reason: the error code
    the target gave with the model's, or the names of the other fields that differ, or else the
    reason with every value removed. Any other finding (an invariant, a wire problem) is named by
    its message with values removed. Clocks, member ids, references, versions and how many
    hypotheses were tried never count."""
    sends = _SENDS.search(message)
    tried = _TRIED.search(message)
    if sends is None or tried is None:
        return f"{rule} {_shape(message)}".strip()
    request = sends.group(1) or "time"
    reason = message[tried.end() :].split(" | ")[0]
    about = _REF.match(reason)
    if about is not None:  # the reason is about one answer: its request names the divergence
        reason, request = reason[about.end() :], about.group(1)
    parts = [rule, request]
    errors = _ERROR.findall(reason)
    fields = sorted({f for f in _FIELD.findall(reason) if f != "error"})
    if errors:
        parts.append(", ".join(f"error {t} (model {m})" for t, m in dict.fromkeys(errors)))
    if fields:
        parts.append("fields " + ",".join(fields))
    if not errors and not fields:
        parts.append(_shape(reason))
    return " ".join(parts)


@dataclass
class Occurrence:
    """Where a signature was met: the run's group, the example, the observation step, the
    protocol-level message, and whether an earlier deviation of the example was adopted."""

    group: int
    example: int
    step: int
    message: str
    tainted: bool


@dataclass
class Divergence:
    """One distinct divergence: its signature, how often it was met, the first and the smallest
    occurrence and the trace of the smallest (a `conformance.formats.trace_file.Trace`)."""

    signature: str
    rule: str
    count: int
    first: Occurrence
    smallest: Occurrence
    trace: Any = None
    #: a safety or transition invariant of the model (not an oracle answer, not the wire)
    safety: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "rule": self.rule,
            "count": self.count,
            "safety": self.safety,
            "first": vars(self.first),
            "smallest": vars(self.smallest),
        }


def is_oracle_rule(rule: str) -> bool:
    """Rules about the target's answers and wire, as opposed to the model's invariants."""
    return rule.startswith(("oracle.", "wire.", "target."))


class FindingsLimit(BaseException):  # noqa: N818 - a stop, not an error: Hypothesis must not catch it
    """``--max-findings`` distinct divergences were found: the run stops here (a BaseException, so
    Hypothesis lets it through instead of replaying the example)."""


@dataclass
class DivergenceLog:
    """The distinct divergences of one group's run (`absorb` merges other groups' logs into one).

    ``snapshot(sim, violation, occurrence, signature)`` records the trace of an occurrence; it is called only when the
    occurrence may become its signature's smallest, so a divergence met a thousand times costs one
    trace. ``max_findings`` (0: no bound) stops the run once that many distinct ones are known."""

    snapshot: Callable[[Any, Any, Occurrence, str], Any] | None = None
    max_findings: int = 0
    by_signature: dict[str, Divergence] = field(default_factory=dict)
    occurrences: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, violation: Any, occurrence: Occurrence, sim: Any) -> Divergence:
        """One occurrence of ``violation`` (rule ``invariant``, ``message``); raises `FindingsLimit`
        when it is the distinct divergence that reaches ``max_findings``."""
        sig = signature(violation.invariant, violation.message)
        with self._lock:
            self.occurrences += 1
            d = self.by_signature.get(sig)
            if d is None:
                d = Divergence(
                    sig, violation.invariant, 0, occurrence, occurrence,
                    safety=not is_oracle_rule(violation.invariant),
                )  # fmt: skip
                self.by_signature[sig] = d
                better = True
            else:
                better = _smaller(occurrence, d.smallest)
                if _earlier(occurrence, d.first):
                    d.first = occurrence
            d.count += 1
            if better:
                d.smallest = occurrence
        if better and self.snapshot is not None:
            trace = self.snapshot(sim, violation, occurrence, sig)
            with self._lock:
                if d.smallest is occurrence:
                    d.trace = trace
        if self.max_findings and len(self.by_signature) >= self.max_findings:
            raise FindingsLimit(f"{len(self.by_signature)} distinct divergences")
        return d

    def absorb(self, d: Divergence) -> None:
        """Add another log's divergence (another group's): counts add up; the first and the
        smallest occurrence, with its trace, are the earlier and the smaller of the two."""
        with self._lock:
            mine = self.by_signature.get(d.signature)
            if mine is None:
                self.by_signature[d.signature] = Divergence(
                    d.signature, d.rule, d.count, d.first, d.smallest, d.trace, d.safety
                )
                return
            mine.count += d.count
            if _earlier(d.first, mine.first):
                mine.first = d.first
            if _smaller(d.smallest, mine.smallest):
                mine.smallest, mine.trace = d.smallest, d.trace

    def distinct(self) -> list[Divergence]:
        """Every distinct divergence, in the order first seen (group, example, step): the same
        whatever order they were recorded or absorbed in."""
        with self._lock:
            out = list(self.by_signature.values())
        return sorted(out, key=lambda d: (_order(d.first), d.signature))


def _order(o: Occurrence) -> tuple[int, int, int]:
    return (o.group, o.example, o.step)


def _earlier(a: Occurrence, b: Occurrence) -> bool:
    return _order(a) < _order(b)


def _smaller(a: Occurrence, b: Occurrence) -> bool:
    """Untainted before tainted, then fewer steps, then first seen."""
    return (a.tainted, a.step, _order(a)) < (b.tainted, b.step, _order(b))

"""The model's arbitrary choices beside a real target, and how an oracle enumerates them.

A model coordinator asks a `Chooser` whenever Kafka may choose (a generated member id, a leader,
a protocol-vote tie). Beside a real target the oracle cannot know the choice in advance, so it
runs the model once per choice and keeps the hypotheses whose answers match the target's
(docs/oracle.md#choices: the model ADOPTS the target's choice). `ScriptChooser` follows a script of option
indexes and records the choice points it meets (the classic oracle explores every script,
`script_alternatives`); `RefChooser` takes the first option and leaves the rest to adoption (the
mixed oracle). Fresh ids depend only on the request, so equal hypotheses stay equal and dedupe.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

#: the prefix of a member id the model generated and the target has not named yet
PROVISIONAL = "00000000-0000-4000-8000-"

#: one choice point met while running the model: (kind, options, index taken)
ChoicePoint = tuple[str, tuple[str, ...], int]


class ScriptChooser:
    """Follows a script of option indexes, records every choice point (kind, options) it meets."""

    def __init__(self) -> None:
        self.script: tuple[int, ...] = ()
        self.log: list[ChoicePoint] = []
        self.ref = 0
        self.counter = 0

    def reset(self, script: tuple[int, ...], ref: int = 0) -> None:
        self.script = script
        self.log = []
        self.ref = ref
        self.counter = 0

    def new_uuid(self) -> str:
        """Provisional and the same in every candidate of one operation (so equal hypotheses dedupe)."""
        self.counter += 1
        return f"{PROVISIONAL}{self.ref:08d}{self.counter:04d}"

    def pick(self, kind: str, options: Sequence[str]) -> str:
        i = len(self.log)
        index = self.script[i] if i < len(self.script) else 0
        self.log.append((kind, tuple(options), index))
        return options[index]


def script_alternatives(script: tuple[int, ...], log: Sequence[ChoicePoint]) -> list[tuple[int, ...]]:
    """The scripts still to run after one that met the choice points ``log``: at every point past
    the script's end, each other option, with the choices before it as taken (depth first)."""
    out: list[tuple[int, ...]] = []
    for i in range(len(script), len(log)):
        prefix = tuple(x for _, _, x in log[:i])
        out.extend(prefix + (alt,) for alt in range(1, len(log[i][1])))
    return out


def choices_taken(log: Sequence[ChoicePoint]) -> tuple[str, ...]:
    """The real choices of a run (points with more than one option) as ``kind=option``."""
    return tuple(f"{kind}={opts[i]}" for kind, opts, i in log if len(opts) > 1)


class RefChooser:
    """The model's choices beside a real target: fresh ids depend only on the request (so equal
    hypotheses stay equal; the target's id is adopted anyway), ties take the first option."""

    def __init__(self) -> None:
        self.ref = 0
        self.counter = 0

    def reset(self, ref: int) -> None:
        self.ref, self.counter = ref, 0

    def new_uuid(self) -> str:
        self.counter += 1
        return str(uuid.UUID(int=(0x5EED << 96) | (self.ref << 16) | self.counter, version=4))

    def pick(self, kind: str, options: Any) -> str:
        return str(options[0])

"""Assignor findings as replayable traces: a header line, the request line, the answer line (NDJSON).

Written byte for byte the same for the same finding (sorted keys, no clock), so a seed re-run
reproduces the file; read back strictly (size, line count, header fields) for `--replay`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance import strict
from conformance.errors import UsageError

FORMAT = "groupcheck-assignors-trace"
VERSION = 1
MAX_TRACE = 1 << 20
_HEADER_KEYS = {"format", "version", "library", "assignor", "seed", "outcome", "findings"}


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class AssignorTrace:
    """One judged leader assignment: which library and assignor, what was sent, what came back, what broke."""

    library: str
    assignor: str
    seed: int
    outcome: str  # "violated" or "raised"
    findings: tuple[tuple[str, str], ...]  # (invariant id or "raised", message)
    request: dict[str, Any]
    answer: dict[str, Any]

    def lines(self) -> str:
        header = {
            "format": FORMAT,
            "version": VERSION,
            "library": self.library,
            "assignor": self.assignor,
            "seed": self.seed,
            "outcome": self.outcome,
            "findings": [list(f) for f in self.findings],
        }
        return "".join(_dump(v) + "\n" for v in (header, {"request": self.request}, {"answer": self.answer}))

    def fingerprint(self) -> str:
        body = _dump({"request": self.request, "answer": self.answer}).encode()
        return hashlib.sha256(body).hexdigest()[:12]

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        slug = self.library.replace(":", "-")
        path = folder / f"{slug}_{self.assignor}_{self.fingerprint()}.ndjson"
        path.write_text(self.lines())
        return path


def read_trace(path: Path) -> AssignorTrace:
    """Parse a trace file; bad input is a usage error naming the file, line and field."""
    try:
        data = path.read_bytes()[: MAX_TRACE + 1]
    except OSError as e:
        raise UsageError(f"{path}: cannot read ({e.strerror or e})") from None
    if len(data) > MAX_TRACE:
        raise UsageError(f"{path}: longer than {MAX_TRACE} bytes")
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8") from None
    if len(lines) != 3:
        raise UsageError(f"{path}: expected 3 lines (header, request, answer), found {len(lines)}")
    values = []
    for number, line in enumerate(lines, 1):
        try:
            value = strict.json_value(line)  # bounded nesting and integers (docs/hostile-input.md)
        except strict.Malformed as e:
            raise UsageError(e.at(f"{path}:{number}")) from None
        if not isinstance(value, dict):
            raise UsageError(f"{path}:{number}: not a JSON object")
        values.append(value)
    header, request, answer = values
    if set(header) != _HEADER_KEYS or header["format"] != FORMAT or header["version"] != VERSION:
        raise UsageError(f"{path}:1: field format/version: not a {FORMAT} version {VERSION} header")
    for field in ("library", "assignor", "outcome"):
        if not isinstance(header[field], str):
            raise UsageError(f"{path}:1: field {field}: expected a string")
    if not isinstance(header["seed"], int) or not isinstance(header["findings"], list):
        raise UsageError(f"{path}:1: field seed/findings: expected an integer and an array")
    findings = []
    for f in header["findings"]:
        if not (isinstance(f, list) and len(f) == 2 and all(isinstance(x, str) for x in f)):
            raise UsageError(f"{path}:1: field findings: each entry is [id, message]")
        findings.append((f[0], f[1]))
    if set(request) != {"request"} or not isinstance(request["request"], dict):
        raise UsageError(f'{path}:2: field request: expected {{"request": {{...}}}}')
    if set(answer) != {"answer"} or not isinstance(answer["answer"], dict):
        raise UsageError(f'{path}:3: field answer: expected {{"answer": {{...}}}}')
    req = request["request"]
    if not isinstance(req.get("id"), int) or not isinstance(req.get("members"), list):
        raise UsageError(f"{path}:2: field request.id/members: expected an integer and an array")
    if not all(isinstance(m, dict) and isinstance(m.get("member_id"), str) for m in req["members"]):
        raise UsageError(f"{path}:2: field request.members: each member needs a member_id")
    return AssignorTrace(
        header["library"],
        header["assignor"],
        header["seed"],
        header["outcome"],
        tuple(findings),
        req,
        answer["answer"],
    )

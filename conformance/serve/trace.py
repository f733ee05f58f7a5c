"""The served coordinator's trace: one NDJSON line per request, answer, adversary action and closed
connection, numbered in the order the server saw them.

No wall-clock time and no client-made identifier (KIP-848 member ids are random UUIDs made by the
client) enters a line, so the same seed and the same client behaviour give the same bytes.
Connections are numbered in accept order and named by the client id of their requests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

#: a trace stops growing past this many lines (a `truncated` line says so)
MAX_LINES = 1_000_000


def _request_summary(request: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"group": getattr(request, "group_id", "")}
    for name in ("generation_id", "member_epoch"):
        if hasattr(request, name):
            out[name] = getattr(request, name)
    if hasattr(request, "protocols"):
        out["protocols"] = [n for n, _ in request.protocols]
    if getattr(request, "subscribed_topic_names", None) is not None:
        out["subscribed"] = sorted(request.subscribed_topic_names)
    if hasattr(request, "partitions") and isinstance(request.partitions, tuple):
        out["offsets"] = sorted(f"{p.topic}:{p.partition}={p.offset}" for p in request.partitions)
    return out


class Trace:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.out: IO[str] | None = path.open("w", encoding="utf-8") if path is not None else None
        self.seq = 0
        self.lines: list[dict[str, Any]] = []  # kept in memory too, for tests and the summary

    def _write(self, line: dict[str, Any]) -> None:
        if self.seq >= MAX_LINES:
            return
        self.seq += 1
        line = {"seq": self.seq, **line}
        if self.seq == MAX_LINES:
            line = {"seq": self.seq, "kind": "truncated"}
        self.lines.append(line)
        if len(self.lines) > 10_000:
            del self.lines[:5_000]
        if self.out is not None:
            self.out.write(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n")
            self.out.flush()

    def exchange(self, conn: int, client: str, api: str, version: int, answer: dict[str, Any]) -> None:
        self._write(
            {
                "kind": "exchange",
                "conn": conn,
                "client": client,
                "api": api,
                "version": version,
                "answer": answer,
            }
        )

    def request(self, conn: int, client: str, api: str, version: int, ref: int, request: Any) -> None:
        self._write(
            {
                "kind": "request",
                "conn": conn,
                "client": client,
                "api": api,
                "version": version,
                "ref": ref,
                "request": _request_summary(request),
            }
        )

    def response(
        self, conn: int, client: str, api: str, ref: int, answer: dict[str, Any], fault: str | None
    ) -> None:
        line = {"kind": "response", "conn": conn, "client": client, "api": api, "ref": ref, "answer": answer}
        if fault is not None:
            line["fault"] = fault
        self._write(line)

    def adversary(self, action: str, group: str, detail: str) -> None:
        if detail.startswith(("groupcheck-phantom-",)) or action in ("failover", "phantom-leave"):
            shown = detail
        else:
            shown = detail if not _looks_random(detail) else "member"
        self._write({"kind": "adversary", "action": action, "group": group, "detail": shown})

    def connection(self, conn: int, client: str, why: str) -> None:
        self._write({"kind": "closed", "conn": conn, "client": client, "why": why})

    def close(self) -> None:
        if self.out is not None:
            self.out.close()
            self.out = None


def _looks_random(text: str) -> bool:
    """A member id made by a client (a UUID, or a client id followed by one)."""
    return len(text) >= 22 and any(c.isdigit() for c in text)

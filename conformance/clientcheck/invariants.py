"""Client-side invariants, judged on what real consumers asked the served coordinator (docs/clients.md).

Pure functions of a `Recorder` log (conformance/clientcheck/observe.py); each returns its findings
and how often it was exercised. A response the adversary lost never reached the client, and one it
delayed reached it later than the log shows: only answers delivered at once move a client's state
towards stricter judgement (soundness before completeness).

* ``client.released_before_acknowledged`` (KIP-848): a heartbeat that reports new partitions as owned
  holds nothing outside one target the member was given: revoked partitions are released first.
* ``client.revoked_not_committed``: a commit names only partitions the member holds: for KIP-848 its
  last reported owned set or its latest target, emptied by its rejoin at epoch 0; for the classic
  protocol its last SyncGroup assignment, emptied by an eager rejoin (KIP-429) and narrowed to the
  owned partitions a cooperative rejoin claims.
* ``client.fenced_rejoins_same_member_id`` (KIP-1082): after FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID,
  a v1 member's next heartbeat rejoins at epoch 0 with the member id it had.
* ``client.takes_only_released`` (KIP-848): a member reports a partition newly owned only when no
  other live member's last report still owns it.
* the leader's classic assignments: every ``client.*`` assignment invariant of the model
  (model/assignors/invariants.py: single owner, only subscribed, complete, sticky claims, balance,
  cooperative no direct transfer) on each SyncGroup the leader sent, with the subscriptions its
  JoinGroup answer carried.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from model.assignors.base import COOPERATIVE, EAGER
from model.assignors.invariants import AssignmentObservation
from model.embedded import Assignment, Subscription
from model.errors import ErrorCode

LOST_MEMBERSHIP = (int(ErrorCode.UNKNOWN_MEMBER_ID), int(ErrorCode.FENCED_MEMBER_EPOCH))
CLIENT_SIDE = (
    "client.released_before_acknowledged",
    "client.revoked_not_committed",
    "client.fenced_rejoins_same_member_id",
    "client.takes_only_released",
)


@dataclass
class Judgement:
    findings: list[dict[str, Any]] = field(default_factory=list)
    exercised: Counter[str] = field(default_factory=Counter)

    def fail(self, inv: str, entry: dict[str, Any], message: str) -> None:
        self.findings.append(
            {"invariant": inv, "seq": entry["seq"], "client": entry.get("client", ""), "message": message}
        )


def _delivered(entry: dict[str, Any]) -> bool:
    return entry["kind"] == "response" and "fault" not in entry


def _fmt(parts: set[str]) -> str:
    return ", ".join(sorted(parts))


def judge(log: list[dict[str, Any]], partitions: dict[str, int]) -> Judgement:
    j = Judgement()
    _kip848(log, j)
    _commits(log, j)
    _leader_assignments(log, partitions, j)
    return j


def _kip848(log: list[dict[str, Any]], j: Judgement) -> None:
    owned: dict[str, set[str]] = {}  # member -> last reported owned set
    target: dict[str, set[str] | None] = {}  # member -> latest target received
    candidates: dict[str, list[set[str]]] = {}  # member -> targets it may be acknowledging
    fenced: dict[str, str] = {}  # client -> its member id when it was told it lost its membership
    for e in log:
        if e.get("api") != "ConsumerGroupHeartbeat":
            continue
        m, client = e["member"], e["client"]
        if e["kind"] == "request":
            if client in fenced and e["epoch"] >= 0 and e.get("version", 1) >= 1:
                was = fenced.pop(client)
                j.exercised["client.fenced_rejoins_same_member_id"] += 1
                if e["epoch"] != 0 or m != was:
                    j.fail(
                        "client.fenced_rejoins_same_member_id", e,
                        f"{client}: after losing its membership as {was} it came back as {m} at epoch {e['epoch']}"
                        " (KIP-1082: epoch 0, the same member id)",
                    )  # fmt: skip
            if e["epoch"] <= 0:
                owned[m], target[m], candidates[m] = set(), None, []
                continue
            if e["owned"] is None:
                continue
            now, before = set(e["owned"]), owned.get(m, set())
            added = now - before
            if added:
                j.exercised["client.released_before_acknowledged"] += 1
                if not any(now <= t for t in candidates.get(m, [])):
                    extra = now - (target.get(m) or set())
                    j.fail(
                        "client.released_before_acknowledged", e,
                        f"{m} acknowledged {_fmt(added)} while still holding {_fmt(extra)}, outside every target it was given",
                    )  # fmt: skip
                live = [n for n in e.get("live", []) if n != m]
                if live:
                    j.exercised["client.takes_only_released"] += 1
                for n in live:
                    still = added & owned.get(n, set())
                    if still:
                        j.fail(
                            "client.takes_only_released", e,
                            f"{m} took {_fmt(still)}, still owned by live member {n} per its last heartbeat",
                        )  # fmt: skip
            if now != before:
                owned[m] = now
                latest = target.get(m)
                candidates[m] = [latest] if latest is not None else []
        elif _delivered(e):
            if e["error"] in LOST_MEMBERSHIP:
                fenced[client] = m
                owned[m], target[m], candidates[m] = set(), None, []
            elif e["error"] == 0 and e.get("assigned") is not None:
                target[m] = set(e["assigned"])
                candidates.setdefault(m, []).append(set(e["assigned"]))


def _commits(log: list[dict[str, Any]], j: Judgement) -> None:
    """A client may pipeline a commit behind a request whose answer is still on its way, so what it
    holds shrinks only through its own later requests: a KIP-848 join or owned report, a classic
    JoinGroup (an eager one gives everything up, a cooperative one claims its owned partitions, a
    new member's claims nothing). A lost answer gives nothing."""
    holding: dict[str, set[str]] = {}  # client -> partitions it holds (classic)
    owned: dict[str, set[str]] = {}  # client -> last KIP-848 owned report
    target: dict[str, set[str]] = {}  # client -> latest KIP-848 target received
    for e in log:
        client, api = e.get("client", ""), e.get("api")
        if e["kind"] == "request" and api == "OffsetCommit":
            j.exercised["client.revoked_not_committed"] += 1
            held = holding.get(client, set()) | owned.get(client, set()) | target.get(client, set())
            stray = set(e["partitions"]) - held
            if stray:
                j.fail(
                    "client.revoked_not_committed", e,
                    f"{client} ({e['member'] or 'no member'}, generation/epoch {e['generation']}) committed "
                    f"{_fmt(stray)}, which it does not hold",
                )  # fmt: skip
        elif e["kind"] == "request" and api == "ConsumerGroupHeartbeat":
            if e["epoch"] <= 0:
                owned[client], target[client] = set(), set()
            elif e["owned"] is not None:
                owned[client] = set(e["owned"])
        elif e["kind"] == "request" and api == "JoinGroup":
            cooperative = e["protocols"][:1] == ["cooperative-sticky"]
            holding[client] = set(e.get("owned", [])) if cooperative and e["member"] else set()
        elif e["kind"] == "response" and api == "ConsumerGroupHeartbeat":
            if e["error"] == 0 and e.get("assigned") is not None:
                target[client] = set(e["assigned"])
        elif e["kind"] == "response" and api == "SyncGroup" and e["error"] == 0 and e.get("fault") != "lose":
            # grows only: a cooperative member keeps what the new assignment revokes until its
            # rejoin says what it still owns (KIP-429); an eager one held nothing since its JoinGroup
            holding[client] = holding.get(client, set()) | set(e.get("assignment", []))


def _leader_assignments(log: list[dict[str, Any]], partitions: dict[str, int], j: Judgement) -> None:
    from conformance.clients.protocol import client_invariants

    joined: dict[tuple[str, int], dict[str, Any]] = {}  # (leader, generation) -> its JoinGroup answer
    for e in log:
        if e.get("api") != "JoinGroup" and e.get("api") != "SyncGroup":
            continue
        if (
            e["kind"] == "response"
            and e["api"] == "JoinGroup"
            and e["error"] == 0
            and e["leader"] == e["member"]
        ):
            joined[(e["member"], e["generation"])] = e
        if not (e["kind"] == "request" and e["api"] == "SyncGroup" and e.get("assignments")):
            continue
        answer = joined.get((e["member"], e["generation"]))
        if answer is None or any("undecodable" in s for s in answer["subscriptions"].values()):
            continue
        protocol = answer["protocol"] or ""
        subs = {
            m: Subscription(
                tuple(s["topics"]),
                bytes.fromhex(s["user_data"]) if "user_data" in s else None,
                tuple(_tp(x) for x in s["owned"]),
                s["generation"],
            )
            for m, s in answer["subscriptions"].items()
        }
        assigned = {
            m: Assignment(tuple(_tp(x) for x in a.get("partitions", []))) for m, a in e["assignments"].items()
        }
        rebalance = COOPERATIVE if protocol == "cooperative-sticky" else EAGER
        obs = AssignmentObservation(dict(partitions), subs, assigned, rebalance, protocol)
        for inv in client_invariants():
            j.exercised[inv.id] += 1
            for message in inv.check(obs):
                j.fail(
                    inv.id, e, f"leader {e['member']}, generation {e['generation']} ({protocol}): {message}"
                )


def _tp(text: str) -> tuple[str, int]:
    topic, _, partition = text.rpartition(":")
    return topic, int(partition)

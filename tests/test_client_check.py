"""Client-side invariants on logs of real consumers' requests, and `check --client --replay`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.cli.main import main
from conformance.clientcheck.invariants import judge
from conformance.clientcheck.observe import Recorder
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)

TOPICS = {"t": 4}


class Log:
    """Builds a log entry by entry, as the Recorder writes it."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.ref = 0

    def add(self, **entry: Any) -> Log:
        self.entries.append({"seq": len(self.entries) + 1, **entry})
        return self

    def beat(self, client: str, member: str, epoch: int, owned: list[str] | None, **answer: Any) -> Log:
        self.ref += 1
        live = answer.pop("live", [member])
        self.add(kind="request", api="ConsumerGroupHeartbeat", client=client, ref=self.ref, member=member,
                 epoch=epoch, owned=owned, live=live, version=1)  # fmt: skip
        if answer:
            new_epoch = answer.pop("new_epoch", max(epoch, 1))
            response = {"error": 0, "epoch": new_epoch, "assigned": None} | answer
            self.add(
                kind="response",
                api="ConsumerGroupHeartbeat",
                client=client,
                ref=self.ref,
                member=member,
                **response,
            )
        return self

    def commit(self, client: str, member: str, generation: int, partitions: list[str]) -> Log:
        self.ref += 1
        return self.add(kind="request", api="OffsetCommit", client=client, ref=self.ref, member=member,
                        generation=generation, partitions=partitions)  # fmt: skip


def ids(log: Log) -> list[str]:
    return sorted({f["invariant"] for f in judge(log.entries, TOPICS).findings})


def test_a_clean_kip848_reconciliation_passes() -> None:
    log = Log().beat("c1", "m1", 0, [], assigned=["t:0", "t:1"])
    log.beat("c1", "m1", 1, ["t:0", "t:1"], assigned=["t:0"], new_epoch=2)  # t:1 is to go
    log.commit("c1", "m1", 2, ["t:0", "t:1"])  # still held while being revoked
    log.beat("c1", "m1", 2, ["t:0"], error=0)
    judgement = judge(log.entries, TOPICS)
    assert judgement.findings == []
    assert judgement.exercised["client.released_before_acknowledged"] == 1
    assert judgement.exercised["client.revoked_not_committed"] == 1


def test_acknowledging_new_partitions_before_releasing_is_caught() -> None:
    log = Log().beat("c1", "m1", 0, [], assigned=["t:0", "t:1"])
    log.beat("c1", "m1", 1, ["t:0", "t:1"], assigned=["t:0", "t:2"], new_epoch=2)
    log.beat("c1", "m1", 2, ["t:0", "t:1", "t:2"], error=0)  # took t:2, kept t:1
    assert ids(log) == ["client.released_before_acknowledged"]


def test_committing_a_released_partition_is_caught() -> None:
    log = Log().beat("c1", "m1", 0, [], assigned=["t:0", "t:1"])
    log.beat("c1", "m1", 1, ["t:0", "t:1"], assigned=["t:0"], new_epoch=2)
    log.beat("c1", "m1", 2, ["t:0"], error=0)
    log.commit("c1", "m1", 2, ["t:1"])
    assert ids(log) == ["client.revoked_not_committed"]


def test_classic_eager_rejoin_gives_everything_up_before_commits() -> None:
    log = Log().add(
        kind="response", api="SyncGroup", client="c1", ref=1, member="m1", error=0, assignment=["t:0"]
    )
    log.commit("c1", "m1", 1, ["t:0"])
    assert ids(log) == []
    log.add(kind="request", api="JoinGroup", client="c1", ref=9, member="m1", protocols=["range"], owned=[])
    log.commit("c1", "m1", 1, ["t:0"])
    assert ids(log) == ["client.revoked_not_committed"]


def test_fenced_member_must_rejoin_at_epoch_zero_with_its_id() -> None:
    good = Log().beat("c1", "m1", 0, [], assigned=["t:0"]).beat("c1", "m1", 1, ["t:0"], error=25, new_epoch=0)
    good.beat("c1", "m1", 0, [], assigned=["t:0"])
    assert ids(good) == []
    assert judge(good.entries, TOPICS).exercised["client.fenced_rejoins_same_member_id"] == 1
    bad = Log().beat("c1", "m1", 0, [], assigned=["t:0"]).beat("c1", "m1", 1, ["t:0"], error=110, new_epoch=0)
    bad.beat("c1", "m2", 0, [], assigned=["t:0"])
    assert ids(bad) == ["client.fenced_rejoins_same_member_id"]
    lost = Log().beat("c1", "m1", 0, [], assigned=["t:0"]).beat("c1", "m1", 1, ["t:0"], error=25, new_epoch=0)
    lost.entries[-1]["fault"] = "lose"  # the client never heard it: nothing to judge
    lost.beat("c1", "m2", 0, [], assigned=["t:0"])
    assert ids(lost) == []


def test_taking_a_partition_another_live_member_owns_is_caught() -> None:
    log = Log().beat("c1", "m1", 0, [], assigned=["t:0", "t:1"])
    log.beat("c1", "m1", 1, ["t:0", "t:1"], error=0)
    log.beat("c2", "m2", 0, [], assigned=["t:1"], live=["m1", "m2"])
    log.beat("c2", "m2", 2, ["t:1"], error=0, live=["m1", "m2"])  # m1 has not released t:1
    assert ids(log) == ["client.takes_only_released"]
    log.entries[-2]["live"] = log.entries[-4]["live"] = ["m2"]  # m1 was gone: nothing taken from it
    assert ids(log) == []


def test_leader_assignment_is_judged_with_the_assignor_invariants() -> None:
    subs = {m: {"topics": ["t"], "owned": [], "generation": -1} for m in ("m1", "m2")}
    log = Log().add(kind="response", api="JoinGroup", client="c1", ref=1, member="m1", leader="m1",
                    error=0, generation=1, protocol="range", subscriptions=subs)  # fmt: skip
    doubled = {"m1": {"partitions": ["t:0", "t:1", "t:2", "t:3"]}, "m2": {"partitions": ["t:3"]}}
    log.add(kind="request", api="SyncGroup", client="c1", ref=2, member="m1", generation=1, protocol="range",
            assignments=doubled)  # fmt: skip
    assert "client.assignment_single_owner" in ids(log)


def test_recorder_aliases_client_made_member_ids_in_first_seen_order() -> None:
    rec = Recorder()
    state = type("S", (), {"consumer": type("C", (), {"groups": {}})()})()
    for ref, member in enumerate(
        ["Zq9-uuid-one-xxxxxxxxx", "Aa1-uuid-two-xxxxxxxxx", "Zq9-uuid-one-xxxxxxxxx"]
    ):
        req = ConsumerGroupHeartbeatRequest(
            "g", member, 0, subscribed_topic_names=("t",), topic_partitions=()
        )
        rec("request", ref=ref, client="c1", request=req, state=state)
        resp = ConsumerGroupHeartbeatResponse(
            member_id=member, member_epoch=1, assignment=(TopicPartitions("t", (0,)),)
        )
        rec("response", ref=ref, client="c1", response=resp, fault=None)
    assert [e["member"] for e in rec.log] == ["m1", "m1", "m2", "m2", "m1", "m1"]
    assert rec.log[1]["assigned"] == ["t:0"]


def _saved(tmp_path: Path, log: Log) -> Path:
    path = tmp_path / "log.ndjson"
    header = {"groupcheck_client_log": 1, "config": {"topics": TOPICS}}
    path.write_text("\n".join(json.dumps(x) for x in [header, *log.entries]) + "\n")
    return path


def test_replay_judges_a_saved_log_again(tmp_path: Path, capsys: Any) -> None:
    log = Log().beat("c1", "m1", 0, [], assigned=["t:0"]).beat("c1", "m1", 1, ["t:0"], error=0)
    assert main(["check", "--client", "librdkafka", "--replay", str(_saved(tmp_path, log))]) == 0
    log.commit("c1", "m1", 1, ["t:3"])
    assert main(["check", "--client", "librdkafka", "--replay", str(_saved(tmp_path, log))]) == 1
    assert "client.revoked_not_committed" in capsys.readouterr().out


def test_replay_refuses_bad_logs_naming_the_line(tmp_path: Path, capsys: Any) -> None:
    path = _saved(tmp_path, Log().beat("c1", "m1", 0, [], assigned=["t:0"]))
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[1].replace('"epoch": 0', '"epoch": "zero"')]) + "\n")
    assert main(["check", "--client", "librdkafka", "--replay", str(path)]) == 2
    assert ":2: field epoch" in capsys.readouterr().err
    path.write_text("{}\n")
    assert main(["check", "--client", "librdkafka", "--replay", str(path)]) == 2
    assert main(["check", "--client", "cobol"]) == 2
    assert main(["check", "--client", "java:2.2.2"]) == 2  # no group.protocol before 3.7


def test_a_commit_pipelined_behind_a_fenced_heartbeat_is_not_blamed_but_one_after_the_rejoin_is() -> None:
    log = Log().beat("c1", "m1", 0, [], assigned=["t:1"]).beat("c1", "m1", 1, ["t:1"], error=25, new_epoch=0)
    log.commit("c1", "m1", 1, ["t:1"])  # may have left the client before the answer arrived
    assert ids(log) == []
    log.beat("c1", "m1", 0, [])  # the rejoin: the client has given t:1 up
    log.commit("c1", "m1", 1, ["t:1"])
    assert ids(log) == ["client.revoked_not_committed"]


def test_a_cooperative_rejoin_keeps_only_the_partitions_it_claims() -> None:
    log = Log().add(
        kind="response", api="SyncGroup", client="c1", ref=1, member="m1", error=0, assignment=["t:0", "t:1"]
    )
    log.add(
        kind="request",
        api="JoinGroup",
        client="c1",
        ref=2,
        member="m1",
        protocols=["cooperative-sticky"],
        owned=["t:0"],
    )
    log.commit("c1", "m1", 1, ["t:0"])
    assert ids(log) == []
    log.commit("c1", "m1", 1, ["t:1"])
    assert ids(log) == ["client.revoked_not_committed"]


def test_replay_of_a_folder_tables_every_run(tmp_path: Path, capsys: Any) -> None:
    clean = Log().beat("c1", "m1", 0, [], assigned=["t:0"]).beat("c1", "m1", 1, ["t:0"], error=0)
    for name, log in (("a", clean), ("b", Log().commit("c1", "m1", 1, ["t:2"]))):
        (tmp_path / name).mkdir()
        _saved(tmp_path / name, log)
    assert main(["check", "--client", "librdkafka", "--replay", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "| `a` |" in out and "| `b` |" in out and "`client.revoked_not_committed` (entry 1)" in out

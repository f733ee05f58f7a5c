"""One classic request's transaction: the records it emits, the replies it sends, applied together.

Kafka's classic coordinator (``GroupMetadataManager`` in apache/kafka ``group-coordinator``) builds a
list of records per request and replays them onto its state; the model does the same.
"""

from __future__ import annotations

from model.classic.records import (
    GroupUpdated,
    Record,
    TimerSet,
    apply,
)
from model.classic.state import ClassicGroup, ClassicState, GroupState
from model.errors import ErrorCode
from model.result import Result

E = ErrorCode


S = GroupState


class Tx:
    """Collects the records and deliveries of one operation, applying each record at once."""

    def __init__(self, state: ClassicState) -> None:
        self.state = state
        self.result = Result()

    def emit(self, record: Record) -> None:
        apply(self.state, record)
        self.result.records.append(record)

    def reply(self, ref: int | None, response: object) -> None:
        if ref is not None:
            self.result.reply(ref, response)

    def set(self, group: ClassicGroup, **changes: object) -> None:
        self.emit(GroupUpdated(group.group_id, tuple(sorted(changes.items()))))

    def timer(self, group: ClassicGroup, key: str, deadline: int | None, *args: int) -> None:
        self.emit(TimerSet(group.group_id, key, deadline, tuple(args)))

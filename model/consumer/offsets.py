"""OffsetCommit in a KIP-848 consumer group: the member-epoch checks Kafka applies to a commit
(``ConsumerGroup.validateOffsetCommit``, KIP-848 "Offset commit"; KIP-1251 in later Kafka) and the
metadata-image changes (topics created, deleted, grown) that bump the group epoch.
"""

from __future__ import annotations

from model.consumer.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    TopicPartition,
)
from model.consumer.offset_records import OffsetCommitRecord
from model.consumer.records import (
    MetadataRefreshRecord,
    TopicDeletedRecord,
    TopicRecord,
    apply,
)
from model.consumer.regex_rules import RegexRules
from model.consumer.state import (
    ConsumerCoordinatorState,
    ConsumerGroup,
    ConsumerMember,
)
from model.consumer.txn import _effective_regex, _Txn
from model.errors import ErrorCode
from model.result import Result


class OffsetsAndTopics(RegexRules):
    """Offset commits and topic changes, on top of the group-wide rules."""

    def handle_offset_commit(
        self, state: ConsumerCoordinatorState, request: OffsetCommitRequest, ref: int, now: int
    ) -> Result:
        """docs/protocol-reference.md#a7 pre-checks per partition, then the group-level check (#b12) for every partition that
        passed them, then per-partition metadata size."""
        result = Result()
        txn = _Txn(state, request.group_id)
        group_error = self.offset_commit_group_error(state, request)
        older = (
            self.older_epoch_member(state, request) if group_error == ErrorCode.STALE_MEMBER_EPOCH else None
        )
        topics: list[OffsetCommitResponseTopic] = []
        for topic in request.topics:
            parts: list[OffsetCommitResponsePartition] = []
            for p in topic.partitions:
                code = self.offset_commit_partition_precheck(state, request, topic.name, p.partition_index)
                if code is None and older is not None:  # KIP-1251: per partition
                    code = self.assignment_epoch_error(older, request, (topic.name, p.partition_index))
                elif code is None:
                    code = group_error
                if (
                    code is None
                    and len((p.committed_metadata or "").encode()) > self.config.offset_metadata_max_bytes
                ):
                    code = ErrorCode.OFFSET_METADATA_TOO_LARGE
                if code is None:
                    code = ErrorCode.NONE
                    txn.emit(
                        OffsetCommitRecord(
                            request.group_id,
                            topic.name,
                            p.partition_index,
                            p.committed_offset,
                            p.committed_leader_epoch,
                            p.committed_metadata,
                        )
                    )
                parts.append(OffsetCommitResponsePartition(p.partition_index, code))
            topics.append(OffsetCommitResponseTopic(topic.name, tuple(parts)))
        txn.commit(result)
        result.reply(ref, OffsetCommitResponse(tuple(topics)))
        return result

    def offset_commit_partition_precheck(
        self, state: ConsumerCoordinatorState, request: OffsetCommitRequest, topic: str, partition: int
    ) -> ErrorCode | None:
        """KA L265-310: group ACL, topic ACL, unknown topic or partition."""
        if request.group_id in self.config.group_read_denied:
            return ErrorCode.GROUP_AUTHORIZATION_FAILED
        if topic in self.config.topic_describe_denied:
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if topic not in state.topics or not 0 <= partition < state.topics[topic]:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return None

    def offset_commit_group_error(
        self, state: ConsumerCoordinatorState, request: OffsetCommitRequest
    ) -> ErrorCode | None:
        """GCS L943-960 availability, then docs/protocol-reference.md#a7 missing-group rows and #b12 (CoG L642-674, L816)."""
        if self.config.availability == "inactive":
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.config.availability == "not_coordinator":
            return ErrorCode.NOT_COORDINATOR
        if self.config.availability == "loading":
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        epoch = request.generation_id_or_member_epoch
        group = state.groups.get(request.group_id)
        if group is None:
            if epoch < 0:
                return None
            return ErrorCode.GROUP_ID_NOT_FOUND if request.version >= 9 else ErrorCode.ILLEGAL_GENERATION
        if epoch < 0 and not group.members:
            return None
        member = group.members.get(request.member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if request.version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        if epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return None

    def older_epoch_member(
        self, state: ConsumerCoordinatorState, request: OffsetCommitRequest
    ) -> ConsumerMember | None:
        """Under KIP-1251 (``offset_commit_epochs="assignment"``), the consumer-protocol member whose
        commit carries an epoch older than its current one: each partition is then judged alone."""
        if self.config.offset_commit_epochs != "assignment" or request.version < 9:
            return None
        group = state.groups.get(request.group_id)
        member = None if group is None else group.members.get(request.member_id)
        epoch = request.generation_id_or_member_epoch
        if member is None or member.classic is not None or not 0 <= epoch < member.member_epoch:
            return None
        return member

    @staticmethod
    def assignment_epoch_error(
        member: ConsumerMember, request: OffsetCommitRequest, tp: TopicPartition
    ) -> ErrorCode | None:
        """KIP-1251: accepted iff the member holds ``tp`` (assigned or pending revocation) since an
        epoch not after the commit's; else STALE_MEMBER_EPOCH."""
        since = member.assignment_epoch(tp)
        if since is None or request.generation_id_or_member_epoch < since:
            return ErrorCode.STALE_MEMBER_EPOCH
        return None

    def create_topic(self, state: ConsumerCoordinatorState, topic: str, partitions: int) -> Result:
        """A topic appears; groups subscribed to it get a metadata refresh (GMM `onNewMetadataImage`)."""
        if topic in state.topics:
            raise ValueError(f"topic {topic} exists")
        return self._metadata_change(state, topic, TopicRecord(topic, partitions))

    def delete_topic(self, state: ConsumerCoordinatorState, topic: str) -> Result:
        if topic not in state.topics:
            raise ValueError(f"no topic {topic}")
        return self._metadata_change(state, topic, TopicDeletedRecord(topic))

    def add_partitions(self, state: ConsumerCoordinatorState, topic: str, total: int) -> Result:
        """Partition counts only grow (CreatePartitions)."""
        if state.topics.get(topic, total) >= total:
            raise ValueError(f"topic {topic} must exist and have fewer than {total} partitions")
        return self._metadata_change(state, topic, TopicRecord(topic, total))

    def _metadata_change(self, state: ConsumerCoordinatorState, topic: str, record: object) -> Result:
        result = Result()
        affected = sorted(gid for gid, g in state.groups.items() if self.group_watches_topic(state, g, topic))
        apply(state, record)
        result.records.append(record)
        for gid in affected:
            refresh = MetadataRefreshRecord(gid, True)
            apply(state, refresh)
            result.records.append(refresh)
        return result

    def group_watches_topic(self, state: ConsumerCoordinatorState, group: ConsumerGroup, topic: str) -> bool:
        """Groups subscribed to ``topic`` by name, or with any regex member (regexes are re-resolved)."""
        return topic in group.subscription_metadata or any(
            topic in m.subscribed_topic_names or _effective_regex(m) for m in group.members.values()
        )

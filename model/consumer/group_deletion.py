"""DeleteGroups (api key 42) on the KIP-848 coordinator: an admin deletes empty groups.

From Apache Kafka's group coordinator (apache/kafka@1eb7644, group-coordinator module):

* the service answers every group COORDINATOR_NOT_AVAILABLE while it is inactive, and a shard
  that is not hosted or still loading fails the write operation with NOT_COORDINATOR /
  COORDINATOR_LOAD_IN_PROGRESS (GroupCoordinatorService ``deleteGroups``);
* per group, in request order (GroupCoordinatorShard ``deleteGroups``): a group the shard does not
  hold is GROUP_ID_NOT_FOUND (GroupMetadataManager ``group``); a consumer group that is not Empty is
  NON_EMPTY_GROUP (ConsumerGroup ``validateDeleteGroup``); otherwise a tombstone for every committed
  offset of the group (OffsetMetadataManager ``deleteAllOffsets``) and then the group's tombstones
  (ConsumerGroup ``createGroupTombstoneRecords``; an Empty group has no member records left, so
  what remains is the epoch, target-epoch and subscription-metadata tombstones, the model's
  `ConsumerGroupTombstone`);
* KafkaApis ``handleDeleteGroupsRequest`` answers each distinct id once and needs DELETE on the
  group (not modelled: no ACL denies it here).

Afterwards the group id is free: a ConsumerGroupHeartbeat with member epoch 0 creates a new group,
any other epoch is GROUP_ID_NOT_FOUND (GroupMetadataManager ``getOrMaybeCreateConsumerGroup`` with
``createIfNotExists = memberEpoch == 0``); an OffsetCommit v9+ with a member epoch is
GROUP_ID_NOT_FOUND, one with epoch -1 stores offsets again (OffsetMetadataManager
``validateOffsetCommit``); an OffsetFetch finds no offsets (``fetchOffsets``: -1 per partition).

Model choice: a group id the model holds only offsets for stands for the Empty "simple" classic
group Kafka creates on such a commit (the model does not create it, `model.consumer.coordinator`):
it is deleted like one, offsets first.
"""

from __future__ import annotations

from model.consumer.messages import DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse
from model.consumer.offset_records import OffsetCommitTombstone
from model.consumer.offsets import OffsetsAndTopics
from model.consumer.records import ConsumerGroupTombstone
from model.consumer.state import ConsumerCoordinatorState
from model.consumer.txn import _Rejected, _Txn
from model.errors import ErrorCode
from model.result import Result


class GroupDeletion(OffsetsAndTopics):
    """``handle_delete_groups(state, request, ref, now) -> Result`` (module docstring)."""

    def handle_delete_groups(
        self, state: ConsumerCoordinatorState, request: DeleteGroupsRequest, ref: int, now: int
    ) -> Result:
        result = Result()
        service = self.delete_groups_service_error()
        results: list[DeletableGroupResult] = []
        for group_id in dict.fromkeys(request.groups_names):
            if service is not None:
                results.append(DeletableGroupResult(group_id, service))
                continue
            txn = _Txn(state, group_id)
            try:
                self.delete_group(txn)
            except _Rejected as rejected:
                results.append(DeletableGroupResult(group_id, rejected.code))
            else:
                txn.commit(result)
                results.append(DeletableGroupResult(group_id))
        result.reply(ref, DeleteGroupsResponse(tuple(results)))
        return result

    def delete_groups_service_error(self) -> ErrorCode | None:
        """GroupCoordinatorService ``deleteGroups``: the service, then the shard's write operation."""
        if self.config.availability == "inactive":
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.config.availability == "not_coordinator":
            return ErrorCode.NOT_COORDINATOR
        if self.config.availability == "loading":
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return None

    def delete_group(self, txn: _Txn) -> None:
        """Validate (``validateDeleteGroup``), then the offsets' tombstones, then the group's."""
        self.validate_delete_group(txn)
        committed = txn.scratch.offsets.get(txn.group_id, {})
        for topic, partition in sorted(committed):
            txn.emit(OffsetCommitTombstone(txn.group_id, topic, partition))
        if txn.group is not None:
            txn.emit(ConsumerGroupTombstone(txn.group_id))

    def validate_delete_group(self, txn: _Txn) -> None:
        group = txn.group
        if group is None:
            if not txn.scratch.offsets.get(txn.group_id):
                raise _Rejected(ErrorCode.GROUP_ID_NOT_FOUND, f"group {txn.group_id} not found")
            return  # only offsets: Kafka's Empty simple group (module docstring)
        if group.members:
            raise _Rejected(ErrorCode.NON_EMPTY_GROUP, f"group {txn.group_id} is not empty")

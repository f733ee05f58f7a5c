"""Classic two-phase group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit.

The client-side assignment proposal that became the two-phase protocol
(docs/protocol-reference.md#client-side-assignment), the Scala coordinator's `doSyncGroup`
(#do-sync-group) and #a (Apache Kafka 4.0 `GroupMetadataManager`,
`classic/ClassicGroup.java`).
"""

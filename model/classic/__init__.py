"""Classic two-phase group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit.

Seed 000 (the client-side assignment proposal that became the two-phase protocol), seed 003
(`doSyncGroup` walk-through) and reference section A (Apache Kafka 4.0 `GroupMetadataManager`,
`classic/ClassicGroup.java`).
"""

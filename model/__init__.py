"""groupcheck reference model: pure, deterministic, no I/O (docs/model.md).

`model.classic` is the two-phase JoinGroup/SyncGroup protocol, `model.consumer` the KIP-848
ConsumerGroupHeartbeat protocol, `model.assignors` the client-side assignors and
`model.embedded` the consumer embedded protocol bytes.
"""

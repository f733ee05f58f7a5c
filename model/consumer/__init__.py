"""KIP-848 consumer group protocol (ConsumerGroupHeartbeat): the reference model.

docs/protocol-reference.md#b (KIP-848 as implemented in Apache Kafka 4.0), #e15 to #e28, KIP-1082 (#kip-1082) and
Vanlightly's TLA+ invariant set (docs/bug-catalogue.md#prior-art). Modules: `messages` (wire data),
`state` (group/member state), `records` (the records and `apply`, the only mutator), `reconcile`
(CurrentAssignmentBuilder as a pure function), `assignors` (server-side uniform/range),
`coordinator` (the handlers), `client` (a virtual KIP-848 consumer), `world` (what invariants see)
and `invariants` (the registered predicates).
"""

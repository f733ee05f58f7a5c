"""z3 proofs and refutations of the protocol rules (docs/proofs.md).

* `conformance.smt.solver`: verdicts and seeded, resource-limited solvers.
* `conformance.smt.kip848`: KIP-848 reconciliation, target changes, join, fence and static leave
  over bit-vector partition sets (docs/protocol-reference.md#b1, #b4, #b5, #b7).
* `conformance.smt.classic`: classic generations, join completion, sync and failover (docs/protocol-reference.md#a1,
  docs/protocol-reference.md#a4, #a8).
* `conformance.smt.classic_assign`: over those rules, the stored, persisted and answered classic
  assignments (single ownership per generation, docs/protocol-reference.md#a4).
* `conformance.smt.claims`: KIP-341 claim resolution and the KIP-429 adjustment (docs/protocol-reference.md#c3, #c5).
* `conformance.smt.batching`: target assignment batching, Kafka 4.2+ (KAFKA-20291).
* `conformance.smt.commit_epochs`: OffsetCommit member-epoch rules, exact and KIP-1251.
* `conformance.smt.induction`: the base-case and inductive-step query every encoding makes.
* `conformance.smt.prove`: the jobs behind `groupcheck prove` and `reports/proofs.md`.

Every encoder is keyed by an invariant id of the registry (one encoder per id, docs/invariants.md); a REFUTED
verdict is only reported after the concrete counterexample was re-run on the Python model and the
registry's own predicate reported the violation.
"""

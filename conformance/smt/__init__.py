"""z3 proofs and refutations of the protocol rules (design §6; issue 6).

* `conformance.smt.solver`: verdicts and seeded, resource-limited solvers.
* `conformance.smt.kip848`: KIP-848 reconciliation, target changes, join, fence and static leave
  over bit-vector partition sets (reference B.1, B.4, B.5, B.7).
* `conformance.smt.classic`: classic generations, join completion, sync and failover (reference A.1,
  A.4, A.8).
* `conformance.smt.claims`: KIP-341 claim resolution and the KIP-429 adjustment (reference C.3, C.5).
* `conformance.smt.prove`: the jobs behind `groupcheck prove` and `reports/proofs.md`.

Every encoder is keyed by an invariant id of the registry (one encoder per id, design §3); a REFUTED
verdict is only reported after the concrete counterexample was re-run on the Python model and the
registry's own predicate reported the violation.
"""

#!/usr/bin/env bash
# Run the groupcheck conformance suite against the broker under test and leave a JUnit file for CI.
#   GROUPCHECK_TARGET  model | mutant:NAME | apache-kafka | kfake | ... | host:port (default: model)
#   GROUPCHECK_PROFILE dev | ci | thorough | faults                            (default: ci)
# Exit status is pytest's: 0 all passed, 1 a test failed (an invariant, a scenario or your own test).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p reports
exec python -m pytest \
  --groupcheck-target "${GROUPCHECK_TARGET:-model}" \
  --groupcheck-profile "${GROUPCHECK_PROFILE:-ci}" \
  --junitxml reports/groupcheck.xml \
  "$@"

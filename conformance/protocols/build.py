"""The simulators' builders of every protocol, in one import (tests, benchmarks, proofs).

Each protocol package builds its own (`conformance.protocols.classic.build`,
`conformance.protocols.consumer.build`); the kits' modules import those, never this one.
"""

from conformance.protocols.classic.build import (
    TEST_CONFIG,
    classic_config,
    client_config,
    make_classic_sim,
    quiet_gap,
    settle_round,
)
from conformance.protocols.consumer.build import (
    CONSUMER_TEST_CONFIG,
    consumer_client_spec,
    consumer_config,
    consumer_settle_bound,
    make_consumer_sim,
)

__all__ = [
    "CONSUMER_TEST_CONFIG",
    "TEST_CONFIG",
    "classic_config",
    "client_config",
    "consumer_client_spec",
    "consumer_config",
    "consumer_settle_bound",
    "make_classic_sim",
    "make_consumer_sim",
    "quiet_gap",
    "settle_round",
]

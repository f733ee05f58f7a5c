"""Client-side assignors run by the classic-protocol leader (docs/protocol-reference.md#c3 to #c5, docs/model.md).

`range`, `roundrobin`, `sticky` (KIP-341 user data V1, or the pre-KIP-341 V0 variant) and
`cooperative-sticky` (KIP-429), looked up by name with `get_assignor`. Kafka:
`clients/src/main/java/org/apache/kafka/clients/consumer/` (RangeAssignor, RoundRobinAssignor,
StickyAssignor, CooperativeStickyAssignor, internals/AbstractStickyAssignor).
"""

from model.assignors.base import ASSIGNOR_NAMES, COOPERATIVE, EAGER, Assignor, get_assignor
from model.assignors.cooperative_sticky import CooperativeStickyAssignor
from model.assignors.range import RangeAssignor
from model.assignors.roundrobin import RoundRobinAssignor
from model.assignors.sticky import StickyAssignor

__all__ = [
    "ASSIGNOR_NAMES",
    "COOPERATIVE",
    "EAGER",
    "Assignor",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "get_assignor",
]

"""Run a mutant virtual consumer inside the unchanged KIP-848 simulator (docs/mutants.md)."""

from __future__ import annotations

from functools import cache
from typing import Any

from model.consumer.client import VirtualConsumer
from model.consumer.sim import ConsumerSim
from model.consumer.sim_specs import ClientSpec


@cache
def mutant_client_sim(client_cls: type[VirtualConsumer]) -> type[ConsumerSim]:
    """A `ConsumerSim` whose processes are ``client_cls`` (a VirtualConsumer subclass adding no state)."""

    class MutantClientSim(ConsumerSim):
        def _process(self, spec: ClientSpec) -> Any:
            client = super()._process(spec)
            client.__class__ = client_cls  # same attributes, one rule overridden
            return client

    MutantClientSim.__name__ = f"ConsumerSim[{client_cls.__name__}]"
    return MutantClientSim

"""Mutant coordinators: the model with one named fault, to show the suite has teeth (issue 8).

Each mutant is a small subclass of a model coordinator overriding one rule, never a copy of the
model. ``--variant mutant=NAME`` runs a check or scenario against it.
"""

from __future__ import annotations

from conformance.mutants.classic import CLASSIC_MUTANTS
from conformance.mutants.consumer import CONSUMER_MUTANTS

__all__ = ["CLASSIC_MUTANTS", "CONSUMER_MUTANTS"]

"""Hypothesis draws that depend on the seed alone, not on which modules a process has loaded.

Hypothesis 6.x mixes into its draws constants it collects from the source of every loaded module
that is not installed in site-packages (``hypothesis/internal/conjecture/providers.py``,
``_get_local_constants``, with ``hypothesis/internal/constants_ast.py``; present in 6.170). Our
own packages and a user's test files are such modules, so the same seed drew different runs under
``groupcheck check``, under pytest and beside a benchmark that had loaded one more file; and
collecting the constants parses every such module (about 7 s of CPU in a one-group check on
Apache Kafka, paid again in each forked group of ``--groups N``). The suite's draws come from its
strategies; the local constants are switched off where the engine runs Hypothesis.
"""

from __future__ import annotations

from typing import Any


def seed_only_draws() -> bool:
    """Switch off Hypothesis' local constants (idempotent); False on a Hypothesis without them."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # an older or newer Hypothesis without the feature: nothing to switch off
        return False
    current: Any = getattr(providers, "_get_local_constants", None)
    if current is None:
        return False
    if getattr(current, "groupcheck_seed_only", False):
        return True
    empty = Constants()

    def none_local() -> Constants:
        return empty

    none_local.groupcheck_seed_only = True  # type: ignore[attr-defined]
    providers._get_local_constants = none_local
    return True

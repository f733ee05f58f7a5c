"""Committed regression traces, installed as the package conformance._regressions by setup.py:
`groupcheck explain` shows the shortest one violating an invariant."""

"""The specs (invariants.yaml, scenarios/, targets.yaml), installed as the package conformance._specs
by setup.py and read with importlib.resources (conformance/resources.py)."""

"""Real consumer libraries on the model served as a coordinator, judged by client-side invariants.

`run.py` runs two consumers of a library (conformance/clients/consumers.py) against `groupcheck
serve` under the adversary; `observe.py` records their group requests; `invariants.py` judges the
log; `command.py` is `groupcheck check --client`; `report.py` tables saved runs (docs/clients.md).
"""

"""groupcheck conformance engine: everything that uses the model (design §1, §4)."""

__version__ = "0.1.0"

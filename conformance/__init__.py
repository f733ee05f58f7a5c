"""groupcheck conformance engine: everything that uses the model (README.md#layout)."""

__version__ = "0.1.0"

"""Counterexample traces: the NDJSON format, its codec, recording, replay and rendering (docs/traces.md)."""

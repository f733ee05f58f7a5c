"""Hypothesis state machines: one per protocol (design §4)."""

"""Hypothesis profiles this repository may pick with --hypothesis-profile (their example and step
counts replace those of --groupcheck-profile)."""

from hypothesis import settings

settings.register_profile("smoke", max_examples=10, stateful_step_count=20)

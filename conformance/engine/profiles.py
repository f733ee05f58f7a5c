"""Hypothesis profiles for the stateful suite: dev, ci, thorough (docs/cli.md#profiles)."""

from __future__ import annotations

from dataclasses import dataclass

from conformance.errors import UsageError


@dataclass(frozen=True)
class Profile:
    name: str
    max_examples: int
    step_count: int
    #: the machines' wire-fault rules (cut connections, duplicated requests) are in the mix
    wire_faults: bool = False
    #: rounds of ``max_examples`` more examples, each on a derived seed, run only while a
    #: `sometimes` goal is unmet: on a real coordinator with slow timers (Kafka's stock session
    #: and heartbeat settings) one seed's examples may not reach every behaviour (docs/cli.md#profiles)
    top_up: int = 0


PROFILES = {
    "dev": Profile("dev", 50, 30),
    "ci": Profile("ci", 150, 40),
    "thorough": Profile("thorough", 2000, 80),
    # the ci mix plus wire faults (conformance/protocols/classic/machine.py; real targets: the fault proxy)
    "faults": Profile("faults", 150, 40, wire_faults=True),
}


#: Profiles against a real coordinator (examples x steps); the names match the model's profiles.
#: Smaller than the model's: every step takes real milliseconds.
REAL_PROFILES = {
    "dev": Profile("dev", 4, 20),
    "ci": Profile("ci", 12, 25, top_up=1),
    "thorough": Profile("thorough", 120, 40, top_up=1),
    "faults": Profile("faults", 6, 25, wire_faults=True, top_up=1),
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise UsageError(f"unknown profile {name!r} (known: {', '.join(PROFILES)})") from None


def real_profile(name: str) -> Profile:
    get_profile(name)  # same names, same error for an unknown one
    return REAL_PROFILES[name]

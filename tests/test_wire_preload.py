"""`conformance.wire.codec.preload`: after it, no supported version's payload class is built again.

``--groups`` forks its group processes after `prepare_groups` preloads, so a group process that
sends, say, JoinGroup v3 finds the class in its parent's memory instead of importing kio's module.
"""

from __future__ import annotations

import sys

from kio.index import UnknownEntity

from conformance.wire.codec import API_JOIN_GROUP, SUPPORTED, module, payload_class, preload


def test_after_preload_every_supported_version_is_built_and_no_module_is_imported() -> None:
    preload()
    loaded = set(sys.modules)
    built = 0
    for api_key, (lo, hi) in SUPPORTED.items():
        for version in range(lo, hi + 1):
            for request in (True, False):
                try:
                    payload_class(api_key, version, request)
                except (UnknownEntity, LookupError):
                    continue
                built += 1
    assert set(sys.modules) == loaded
    assert built >= 2 * (9 + 1)  # JoinGroup v0-9 alone, both ways
    assert module.cache_info().currsize >= built
    assert payload_class(API_JOIN_GROUP, 3, True).__name__ == "JoinGroupRequest"

"""Classic coordinator mutants (issue 6 refutations; reference A.4, E.8).

``stale-sync``: SyncGroup skips the generation check (`validateSyncGroup` GMM L5859), so a leader's
SyncGroup from an earlier generation installs assignments computed for the old membership.
"""

from __future__ import annotations

from dataclasses import replace

from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import SyncGroupRequest
from model.classic.state import ClassicGroup
from model.errors import ErrorCode


class StaleSyncAccepted(ClassicCoordinator):
    """SyncGroup accepted whatever generation it carries (the E.8 check removed)."""

    def validate_sync(self, group: ClassicGroup, req: SyncGroupRequest) -> ErrorCode:
        return super().validate_sync(group, replace(req, generation_id=group.generation))


CLASSIC_MUTANTS: dict[str, type[ClassicCoordinator]] = {
    "stale-sync": StaleSyncAccepted,
}

"""The two error families (docs/cli.md#exit-codes): tool errors (exit 2) versus conformance failures (exit 1)."""

from __future__ import annotations

EXIT_OK, EXIT_VIOLATION, EXIT_TOOL, EXIT_INCONCLUSIVE = 0, 1, 2, 3


class ToolError(Exception):
    """Usage, configuration, spec or target problem: the run could not judge the coordinator."""

    exit_code = EXIT_TOOL


class UsageError(ToolError):
    pass


class SpecError(ToolError):
    """Malformed or inconsistent spec file; the message names the file and line."""


class TargetError(ToolError):
    """A target that cannot be provisioned, started, or that hangs or answers garbage."""

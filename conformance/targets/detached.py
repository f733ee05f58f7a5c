"""Targets that outlive the process that started them: pid files, run folders, spawned children."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.targets.process import Proc, TargetError, _close_pipes, pid_alive, spawn

KEEP_LOGS = 20


@dataclass
class Running:
    """A started instance: its processes, bootstrap address, run folder and log."""

    bootstrap: str
    procs: list[Proc]
    run_dir: Path
    log_path: Path
    detached: bool
    started_at: float = field(default_factory=time.time)
    startup_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class DetachedMixin:
    """Pid files of detached targets, pruning of old runs and logs, and the children's environment."""

    @property
    def pid_file(self) -> Path:
        return self.cache_dir / "run" / "target.json"

    def _write_pid_file(self) -> None:
        running = self._running
        assert running is not None
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "name": self.name,
            "bootstrap": running.bootstrap,
            "run_dir": str(running.run_dir),
            "log_path": str(running.log_path),
            "started_at": running.started_at,
            "startup_s": running.startup_s,
            "procs": [p.to_json() for p in running.procs],
            "extra": running.extra,
        }
        tmp = self.pid_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2))
        tmp.replace(self.pid_file)
        for p in running.procs:  # we are done with the pipes; the processes carry on
            _close_pipes(p)
            p.popen = None

    def _load_pid_file(self) -> Running | None:
        try:
            data = json.loads(self.pid_file.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise TargetError(f"{self.name}: unreadable pid file {self.pid_file}: {e}") from e
        procs = [
            Proc(p["role"], int(p["pid"]), p.get("start_ticks"), None, log_path=Path(data["log_path"]))
            for p in data.get("procs", [])
        ]
        return Running(
            data["bootstrap"],
            procs,
            Path(data["run_dir"]),
            Path(data["log_path"]),
            True,
            started_at=data.get("started_at", 0.0),
            startup_s=data.get("startup_s", 0.0),
            extra=data.get("extra", {}),
        )

    def detached_bootstrap(self) -> str | None:
        """Bootstrap of a detached instance still running (per the pid file), else None."""
        running = self._load_pid_file()
        if running and any(pid_alive(p.pid, p.start_ticks) for p in running.procs):
            return running.bootstrap
        return None

    def _check_no_detached_instance(self) -> None:
        running = self._load_pid_file()
        if running is None:
            return
        if any(pid_alive(p.pid, p.start_ticks) for p in running.procs):
            raise TargetError(
                f"{self.name}: already running at {running.bootstrap} (pid file {self.pid_file}); stop it first"
            )
        with contextlib.suppress(FileNotFoundError):
            self.pid_file.unlink()  # stale
        shutil.rmtree(running.run_dir, ignore_errors=True)

    def _prune_runs(self) -> None:
        """Remove run folders left by processes that died without stopping their target."""
        keep = None
        with contextlib.suppress(TargetError):
            running = self._load_pid_file()
            keep = running.run_dir if running else None
        for run in (self.cache_dir / "runs").glob("*-*-*-*"):
            try:
                owner = int(run.name.split("-")[2])
            except (IndexError, ValueError):
                continue
            if run != keep and owner != os.getpid() and not pid_alive(owner):
                shutil.rmtree(run, ignore_errors=True)

    def _prune_logs(self) -> None:
        logs = sorted((self.cache_dir / "logs").glob("*.log"), key=lambda p: p.stat().st_mtime)
        for old in logs[:-KEEP_LOGS]:
            with contextlib.suppress(OSError):
                old.unlink()

    def _spawn(self, role: str, argv: Sequence[str], log_path: Path, **kw: Any) -> Proc:
        proc = spawn(role, argv, log_path=log_path, detach=self._detach_now, **kw)
        self._launching.append(proc)
        return proc

    def _child_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for target processes: ours, minus settings that could point them elsewhere."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("KAFKA_", "OTEL_", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"))
            and k not in ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE", "CLUSTER_ID")
        }
        env.update(extra or {})
        return env

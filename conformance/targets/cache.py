"""The provisioning cache of real targets: where it lives, its lock, its keys and stamps."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conformance.targets.process import DEFAULT_PROVISION_TIMEOUT_S, Deadline, TargetError

CACHE_ENV = "GROUPCHECK_CACHE"


def cache_base() -> Path:
    """groupcheck's cache: ``$GROUPCHECK_CACHE`` or ``~/.cache/groupcheck``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "groupcheck"


def cache_root() -> Path:
    """Where targets are cached: ``$GROUPCHECK_CACHE/targets`` or ``~/.cache/groupcheck/targets``."""
    return cache_base() / "targets"


@contextlib.contextmanager
def file_lock(path: Path, deadline: Deadline, what: str) -> Iterator[None]:
    """An exclusive lock on ``path`` (flock), waited for until the deadline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if deadline.expired():
                    raise TargetError(f"{what}: lock {path} still held after {deadline.seconds:g}s") from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def digest(*parts: str | bytes | Path) -> str:
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, Path):
            h.update(p.read_bytes())
        elif isinstance(p, str):
            h.update(p.encode())
        else:
            h.update(p)
        h.update(b"\0")
    return h.hexdigest()[:16]


class ProvisionedMixin:
    """A target's cache folder: provisioned once, stamped with its key, read back by later runs."""

    @property
    def stamp_path(self) -> Path:
        return self.cache_dir / "provisioned.json"

    @property
    def provision_log(self) -> Path:
        return self.cache_dir / "provision.log"

    def _read_stamp(self) -> dict[str, Any] | None:
        try:
            stamp = json.loads(self.stamp_path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(stamp, dict) or stamp.get("key") != self.provision_key():
            return None
        return stamp if self._provisioned_ok(stamp) else None

    def is_provisioned(self) -> bool:
        return self._read_stamp() is not None

    def provision(self, timeout_s: float = DEFAULT_PROVISION_TIMEOUT_S) -> None:
        """Fetch and build the target into its cache folder; a no-op when already cached."""
        self._provision_within(Deadline(timeout_s))

    def _provision_within(self, deadline: Deadline) -> dict[str, Any]:
        stamp = self._read_stamp()
        if stamp is not None:
            return stamp
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with file_lock(self.cache_dir / ".provision.lock", deadline, f"{self.name}: provisioning"):
            stamp = self._read_stamp()
            if stamp is not None:
                return stamp
            t0 = time.monotonic()
            try:
                facts = self._provision(deadline, self.provision_log)
            except TargetError as e:
                raise TargetError(f"{self.name}: provisioning failed: {e}") from e
            except TimeoutError as e:
                raise TargetError(f"{self.name}: provisioning timed out: {e}") from e
            stamp = {
                "key": self.provision_key(),
                "name": self.name,
                "provisioned_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "provision_s": round(time.monotonic() - t0, 2),
                **facts,
            }
            tmp = self.stamp_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(stamp, indent=2, sort_keys=True))
            tmp.replace(self.stamp_path)
            return stamp

    def version(self) -> str:
        """The provisioned target's version (the pinned one if not provisioned yet)."""
        stamp = self._read_stamp()
        if stamp and stamp.get("version"):
            return str(stamp["version"])
        return self.pinned_version()

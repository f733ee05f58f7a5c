"""Processes of a real target: deadlines, spawning in its own process group, reading, stopping, tools."""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"


DEFAULT_PROVISION_TIMEOUT_S = 900.0


DEFAULT_START_TIMEOUT_S = 120.0


DEFAULT_STOP_TIMEOUT_S = 60.0


class TargetError(Exception):
    """A real target could not be provisioned, started, probed or stopped (a tool error).

    The message is one line and names the target.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class TargetCrashed(TargetError):
    """A target's process exited on its own (crash, abort, fatal error)."""

    def __init__(self, message: str, *, returncode: int | None = None, stderr_tail: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr_tail = stderr_tail


class Deadline:
    """A point in (monotonic) time; every wait in this package is bounded by one."""

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)
        self.end = time.monotonic() + self.seconds

    def remaining(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.end


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def describe_status(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    if returncode > 128:
        try:
            return f"exit status {returncode} ({signal.Signals(returncode - 128).name}?)"
        except ValueError:
            pass
    return f"exit status {returncode}"


_INTERESTING = re.compile(r"(error|exception|fatal|panic|abort|assert|failed|cannot|could not)", re.I)


def log_tail(path: Path | None, max_len: int = 300) -> str:
    """The most telling line near the end of a log: the last error-looking line, else the last line."""
    if path is None or not path.exists():
        return ""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            lines = [ln.strip() for ln in f.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    if not lines:
        return ""
    pick = next((ln for ln in reversed(lines[-40:]) if _INTERESTING.search(ln)), lines[-1])
    pick = " ".join(pick.split())
    return pick if len(pick) <= max_len else pick[: max_len - 3] + "..."


def _proc_stat(pid: int) -> tuple[str, int, str] | None:
    """(state, pgrp, start time in ticks) of a live process, or None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    except OSError:
        return None
    rest = raw[raw.rfind(")") + 2 :].split()
    # rest[0] = state (field 3), rest[2] = pgrp (field 5), rest[19] = starttime (field 22)
    try:
        return rest[0], int(rest[2]), rest[19]
    except (IndexError, ValueError):
        return None


def pid_alive(pid: int, start_ticks: str | None = None) -> bool:
    """True if ``pid`` is a live (non-zombie) process, and the same one when ``start_ticks`` is given."""
    st = _proc_stat(pid)
    if st is None or st[0] in ("Z", "X"):
        return False
    return start_ticks is None or st[2] == start_ticks


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        st = _proc_stat(int(entry.name))
        if st is not None and st[1] == pgid and st[0] not in ("Z", "X"):
            out.append(int(entry.name))
    return out


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except Exception:
        pass


@dataclass
class Proc:
    """One process a target started; it leads its own process group (pgid == pid)."""

    role: str
    pid: int
    start_ticks: str | None
    popen: subprocess.Popen[bytes] | None = None
    expected_exit: bool = False
    log_path: Path | None = None

    def returncode(self) -> int | None:
        if self.popen is not None:
            return self.popen.poll()
        return None

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        return pid_alive(self.pid, self.start_ticks)

    def group_alive(self) -> bool:
        if self.popen is not None:
            self.popen.poll()  # reap the leader so it does not linger as a zombie
        return self.alive() or bool(group_members(self.pid))

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "pid": self.pid, "start_ticks": self.start_ticks}


def spawn(
    role: str,
    argv: Sequence[str],
    *,
    log_path: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin_pipe: bool = False,
    stdout_pipe: bool = False,
    detach: bool = False,
) -> Proc:
    """Start ``argv`` as the leader of a new process group, stderr (and stdout unless piped) to a log."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("ab")
    try:
        die_with_parent = not detach and threading.current_thread() is threading.main_thread()
        popen = subprocess.Popen(
            list(argv),
            cwd=str(cwd) if cwd else None,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout_pipe else log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            preexec_fn=_die_with_parent if die_with_parent else None,
        )
    except OSError as e:
        raise TargetError(f"cannot run {argv[0]}: {e.strerror or e}") from e
    finally:
        log.close()
    st = _proc_stat(popen.pid)
    return Proc(role, popen.pid, st[2] if st else None, popen, log_path=log_path)


def read_line(proc: Proc, deadline: Deadline, what: str) -> str:
    """The first line a process prints on its (piped) stdout, within the deadline."""
    import selectors

    assert proc.popen is not None and proc.popen.stdout is not None
    fd = proc.popen.stdout.fileno()
    buf = b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while b"\n" not in buf:
            left = deadline.remaining()
            if left <= 0:
                raise TimeoutError(f"did not print {what} within {deadline.seconds:g}s")
            if not sel.select(timeout=min(left, 0.2)):
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                proc.popen.wait(timeout=max(0.1, min(2.0, deadline.remaining())))
                raise EOFError(f"exited before printing {what}")
            buf += chunk
    return buf.split(b"\n", 1)[0].decode("utf-8", "replace").strip()


def terminate(proc: Proc, deadline: Deadline, grace_s: float, *, crash: bool = False) -> None:
    """SIGTERM the process group, wait ``grace_s``, then SIGKILL; wait until the group is empty.

    ``crash``: SIGKILL at once (no shutdown hooks: a JVM writes no clean-shutdown marker, a
    KRaft broker skips its controlled shutdown), the way a machine or process crash looks."""
    proc.expected_exit = True

    def signal_group(sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)

    if not proc.group_alive():
        _close_pipes(proc)
        return
    if crash:
        grace_s = 0.0
    else:
        # Closing stdin first lets the programs that serve until stdin closes exit on their own.
        _close_pipes(proc, stdin_only=True)
        signal_group(signal.SIGTERM)
    grace_end = min(deadline.end, time.monotonic() + grace_s)
    while time.monotonic() < grace_end and proc.group_alive():
        time.sleep(0.05)
    if proc.group_alive():
        signal_group(signal.SIGKILL)
        while not deadline.expired() and proc.group_alive():
            time.sleep(0.05)
    _close_pipes(proc)
    if proc.group_alive():
        raise TimeoutError(f"{proc.role} (pid {proc.pid}) still running after SIGKILL")


def _close_pipes(proc: Proc, stdin_only: bool = False) -> None:
    if proc.popen is None:
        return
    streams = [proc.popen.stdin] if stdin_only else [proc.popen.stdin, proc.popen.stdout]
    for stream in streams:
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def run_tool(
    argv: Sequence[str],
    *,
    deadline: Deadline,
    log_path: Path,
    what: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run a provisioning command to completion within the deadline; returns its stdout.

    Raises TargetError (one line: what failed, exit status, the telling line of its output).
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        shown = " ".join(a if len(a) <= 200 else a[:60] + "..." + a[-40:] for a in argv)
        log.write(f"\n$ {shown}\n".encode())
    if deadline.expired():
        raise TargetError(f"{what}: no time left (deadline {deadline.seconds:g}s)")
    try:
        popen = subprocess.Popen(
            list(argv),
            cwd=str(cwd) if cwd else None,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as e:
        raise TargetError(f"{what}: cannot run {argv[0]}: {e.strerror or e}") from e
    try:
        out, _ = popen.communicate(timeout=deadline.remaining())
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)
        out, _ = popen.communicate()
        _append(log_path, out)
        raise TargetError(f"{what}: timed out after {deadline.seconds:g}s (log: {log_path})") from None
    _append(log_path, out)
    text = out.decode("utf-8", "replace")
    if popen.returncode != 0:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        pick = next((ln for ln in reversed(lines) if _INTERESTING.search(ln)), lines[-1] if lines else "")
        raise TargetError(
            f"{what} failed ({describe_status(popen.returncode)}): {pick[:300]} (log: {log_path})"
        )
    return text


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as f:
        f.write(data)


def java_bin() -> str:
    """The JVM to run Java targets with: $GROUPCHECK_JAVA, else $JAVA_HOME/bin/java, else java on PATH."""
    explicit = os.environ.get("GROUPCHECK_JAVA")
    if explicit:
        return explicit
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise TargetError("java not found on PATH (set JAVA_HOME or GROUPCHECK_JAVA)")
    return found


def require_tool(tool: str, hint: str) -> str:
    found = shutil.which(tool)
    if not found:
        raise TargetError(f"{tool} not found on PATH ({hint})")
    return found

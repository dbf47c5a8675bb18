"""Nothing left behind: a batch's local Ray cluster ends with the batch, even when the batch is killed.

``ray.shutdown()`` ends the local cluster a batch started, but a batch killed outright (SIGKILL, the OOM killer,
a closed terminal) never runs it: Ray's raylet and GCS then die with their parent, while the raylet's own agents
(``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``, ~85-100 MB each) were left running until the next batch.

:func:`start_reaper` starts a small watcher process before ``ray.init``. It reads a pipe whose only writer is the
batch, and meanwhile notes, twice a second, every process descended from the batch (pid and start time, from
``/proc``). When the pipe closes (the batch exited, normally or killed), it ends the processes it saw that are
still alive and the same processes, and any other process of the Ray sessions they named (SIGTERM, then SIGKILL
after ``GRACE_S``), and exits. Linux only (``/proc``);
elsewhere it does nothing.

    python -m posetracker.batch.reaper PID    # watch PID's descendants until stdin closes (the batch runs this)
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

POLL_S = 0.5
GRACE_S = 2.0
SESSION = re.compile(r"session_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_\d+_\d+")  # a Ray session's name


def _processes() -> dict[int, tuple[int, int]]:
    """{pid: (parent pid, start time in clock ticks)} of every process (``/proc/PID/stat``)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state, ppid, ..., starttime (22nd)
        out[int(entry.name)] = (int(fields[1]), int(fields[19]))
    return out


def descendants(root: int, table: dict[int, tuple[int, int]] | None = None) -> dict[int, int]:
    """{pid: start time} of every process below ``root`` (children, their children, ...)."""
    table = _processes() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {}, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid not in found:
            found[pid] = table[pid][1]
            todo += children.get(pid, [])
    return found


def _end(seen: dict[int, int]) -> None:
    """SIGTERM the processes of ``seen`` that still run (same pid and start time), then SIGKILL the stubborn."""
    me = os.getpid()

    def alive() -> list[int]:
        now = _processes()
        return [pid for pid, start in seen.items() if pid != me and now.get(pid, (0, -1))[1] == start]

    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, 0.0)):
        left = alive()
        for pid in left:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = alive()
        if not left:
            return


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _sessions(pids) -> set[str]:
    """The Ray session names (``session_<date>_<time>_<pid>``) on the command lines of ``pids``."""
    return {m for pid in pids for m in SESSION.findall(_cmdline(pid))}


def watch(root: int, pipe=None) -> None:
    """Note ``root``'s descendants until ``pipe`` (default stdin) reaches EOF, then end those still running, and
    every process of the Ray sessions they belonged to (a worker started in the last ``POLL_S``, already moved
    under init when its raylet died, is found by its session's name)."""
    pipe = sys.stdin if pipe is None else pipe
    seen: dict[int, int] = {}
    sessions: set[str] = set()
    while True:
        new = {p: t for p, t in descendants(root).items() if p not in seen}
        seen.update(new)
        sessions |= _sessions(new)
        seen.pop(os.getpid(), None)
        ready, _, _ = select.select([pipe], [], [], POLL_S)
        if ready and not os.read(pipe.fileno(), 4096):  # EOF: the batch is gone
            break
    if sessions:
        now = _processes()
        seen.update({p: now[p][1] for p in now if p != os.getpid() and p not in seen
                     and any(name in _cmdline(p) for name in sessions)})
    _end(seen)


def start_reaper() -> subprocess.Popen | None:
    """Start the watcher of this process's descendants (Linux); None elsewhere. Keep the returned object alive
    for as long as the batch runs: its stdin is the pipe whose closing ends the watch."""
    if not Path("/proc/self/stat").exists():
        return None
    return subprocess.Popen([sys.executable, "-m", "posetracker.batch.reaper", str(os.getpid())],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # its own session: a Ctrl-C or kill of the batch's group spares it


def stop_reaper(reaper: subprocess.Popen | None, timeout: float = 10.0) -> None:
    """Close the watcher's pipe (it ends what is left below this process) and wait for it."""
    if reaper is None:
        return
    try:
        reaper.stdin.close()
        reaper.wait(timeout)
    except (OSError, subprocess.TimeoutExpired):
        reaper.kill()


if __name__ == "__main__":
    watch(int(sys.argv[1]))

"""The CPUs this process may use, and the threads torch and numpy's BLAS run on them.

Low in the package: the session (``posetracker.session``), the live drivers (``posetracker.pipeline_live``) and
the refiners' defaults (``posetracker.refiners.base``) all ask here.
"""

from __future__ import annotations

import os

import torch


class torch_threads:
    """Context manager: run torch with ``n`` threads, then restore."""

    def __init__(self, n: int):
        self.n = n

    def __enter__(self) -> None:
        self.prev = torch.get_num_threads()
        if self.n and self.n != self.prev:
            torch.set_num_threads(self.n)

    def __exit__(self, *exc) -> None:
        if self.n and self.n != self.prev:
            torch.set_num_threads(self.prev)


def limit_blas_threads(n: int) -> None:
    """Cap numpy's BLAS (OpenBLAS) at ``n`` threads for the whole process (threadpoolctl).

    By default it starts a thread per CPU for any product large enough (e.g. the sparse heads of
    :mod:`posetracker.model.heads_at_cells` over a few hundred cells), and those threads keep spinning after
    the call, taking the CPU from the network: live on the openpose street clip on two CPUs that cost a
    third of the frame rate (studies/offset-vote.md). Set once, not per call: the live pipeline's
    two threads share the setting, and restoring it from one of them would race with the other.
    """
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=max(1, int(n)), user_api="blas")


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity, e.g. under ``taskset``; else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity API (macOS, Windows)
        return os.cpu_count() or 1

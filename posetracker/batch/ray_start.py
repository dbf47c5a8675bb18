"""Starting or joining the Ray cluster a batch runs on.

A local cluster (no address) is started with a reaper (:mod:`posetracker.batch.reaper`) so that it ends with
the batch, and its workers run at the batch's own priority: Ray starts workers ``RAY_worker_niceness`` (15)
steps nicer than the process that starts the cluster, which suits a cluster whose driver does the work; a
batch's driver only waits while the workers do all of it, and at +15 they waited behind every other process of
a busy machine (chunk workers seen at nice 19 for 8 minutes). ``nice posetracker batch`` still lowers the whole
batch (workers included); a ``RAY_worker_niceness`` set by the user is kept.

Ray gives a new node's raylet a fixed 30 s to register with its GCS (``ray/_private/node.py``; not configurable
in Ray 2.60). On two busy cores that is sometimes not enough; such a start is retried (``START_TRIES``), the
failed attempt's processes ended by its reaper first.
"""

from __future__ import annotations

import os
from typing import Any

from posetracker.batch.plan import BatchError

START_TRIES = 3  # starts of a local cluster before a batch gives up
START_TIMED_OUT = "timed out during startup"  # Ray's message when the raylet did not register in time


def start_ray(ray: Any, address: str | None, workers: int | None):
    """``ray.init`` a local cluster of ``workers`` CPUs (default: all), or join ``address``; returns the local
    cluster's reaper (None when joining). Raises BatchError when Ray cannot be started or reached."""
    from posetracker.batch.reaper import start_reaper, stop_reaper

    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
    if address:
        try:
            ray.init(address=address, **options)
        except Exception as exc:
            raise BatchError(f"cannot start or reach Ray at {address}: {exc}") from None
        return None
    os.environ.setdefault("RAY_worker_niceness", "0")  # read by the raylet when it starts
    attempt = 0
    while True:
        attempt += 1
        reaper = start_reaper()  # a local cluster ends with this process, even a killed one
        try:
            ray.init(num_cpus=workers or os.cpu_count() or 1, **options)
            return reaper
        except Exception as exc:
            stop_reaper(reaper)  # ends what the attempt started (GCS, raylet, agents)
            if START_TIMED_OUT not in str(exc) or attempt == START_TRIES:
                tries = f" ({attempt} tries)" if attempt > 1 else ""
                raise BatchError(f"cannot start or reach Ray{tries}: {exc}") from None

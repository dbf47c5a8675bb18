"""The batch's Ray start (posetracker.batch.ray_start, issue #50 item 6): a local cluster whose raylet did not
register in Ray's fixed 30 s (a busy machine) is started again, each failed attempt's processes ended by its
reaper first; other errors and joins of an address are not retried; the workers run at the batch's priority.
A stand-in for Ray here (a real retried start: studies/ci-time.md)."""

from __future__ import annotations

import os

import pytest

import posetracker.batch.reaper as reaper_module
from posetracker.batch import BatchError
from posetracker.batch.ray_start import START_TRIES, start_ray

TIMED_OUT = ("The current node timed out during startup. This could happen because some of the raylet failed to "
             "startup or the GCS has become overloaded.")


class StandInRay:
    """``init`` fails with ``errors`` in turn, then succeeds; every call and reaper event is logged in order."""

    def __init__(self, log: list, errors: list[str]):
        self.log, self.errors = log, list(errors)

    def init(self, **options):
        self.log.append(("init", options.get("address"), options.get("num_cpus")))
        if self.errors:
            raise Exception(self.errors.pop(0))


@pytest.fixture
def log(monkeypatch):
    events: list = []
    count = iter(range(1, 100))

    def start_reaper():
        reaper = f"reaper{next(count)}"
        events.append(("start", reaper))
        return reaper

    monkeypatch.setattr(reaper_module, "start_reaper", start_reaper)
    monkeypatch.setattr(reaper_module, "stop_reaper", lambda reaper: events.append(("stop", reaper)))
    return events


def test_a_start_that_timed_out_is_tried_again_after_its_processes_end(log):
    reaper = start_ray(StandInRay(log, [TIMED_OUT, TIMED_OUT]), None, 2)
    assert reaper == "reaper3"
    assert log == [("start", "reaper1"), ("init", None, 2), ("stop", "reaper1"),
                   ("start", "reaper2"), ("init", None, 2), ("stop", "reaper2"),
                   ("start", "reaper3"), ("init", None, 2)]


def test_the_batch_gives_up_after_its_tries_and_on_any_other_error(log):
    with pytest.raises(BatchError, match=rf"cannot start or reach Ray \({START_TRIES} tries\): .*timed out"):
        start_ray(StandInRay(log, [TIMED_OUT] * START_TRIES), None, 1)
    assert [e for e in log if e[0] == "init"] == [("init", None, 1)] * START_TRIES
    assert [e for e in log if e[0] == "stop"] == [("stop", f"reaper{k}") for k in range(1, START_TRIES + 1)]
    log.clear()
    with pytest.raises(BatchError, match=r"cannot start or reach Ray: no shared memory"):
        start_ray(StandInRay(log, ["no shared memory"]), None, 1)
    assert log == [("start", "reaper4"), ("init", None, 1), ("stop", "reaper4")]


def test_an_address_is_joined_once_without_a_reaper(log):
    with pytest.raises(BatchError, match="cannot start or reach Ray at ray://h:1: .*timed out"):
        start_ray(StandInRay(log, [TIMED_OUT]), "ray://h:1", 2)
    assert log == [("init", "ray://h:1", None)]
    assert start_ray(StandInRay(log, []), "ray://h:1", 2) is None


def test_local_workers_run_at_the_batch_s_priority_unless_the_user_says(log, monkeypatch):
    monkeypatch.delenv("RAY_worker_niceness", raising=False)
    start_ray(StandInRay(log, []), None, 1)
    assert os.environ["RAY_worker_niceness"] == "0"
    monkeypatch.setenv("RAY_worker_niceness", "5")
    start_ray(StandInRay(log, []), None, 1)
    assert os.environ["RAY_worker_niceness"] == "5"

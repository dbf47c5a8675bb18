"""pytest plugin: the CPU seconds of each test (this process and the children it waited for, set-up and
teardown included), written as JSON to $CPUCLOCK_OUT at the end of the run ({"tests": [[nodeid, cpu_s, wall_s],
...], "files": {path: [cpu_s, wall_s]}, "total_cpu": s}) and, with $CPUCLOCK_LIVE, one line per test as it
ends. CPU seconds hardly depend on the machine's load, wall seconds do (studies/ci-time.md).

    CPUCLOCK_OUT=cpu.json PYTHONPATH=studies/tools python -m pytest -p cpuclock tests/cli -q
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import defaultdict

import pytest

_rows: list[tuple[str, float, float]] = []


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, wall = _cpu(), time.monotonic()
    yield
    _rows.append((item.nodeid, _cpu() - cpu, time.monotonic() - wall))
    live = os.environ.get("CPUCLOCK_LIVE")
    if live:
        with open(live, "a") as fh:
            fh.write(json.dumps(_rows[-1]) + "\n")


def pytest_sessionfinish(session):
    out = os.environ.get("CPUCLOCK_OUT")
    if not out:
        return
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for nodeid, cpu, wall in _rows:
        files[nodeid.split("::")[0]][0] += cpu
        files[nodeid.split("::")[0]][1] += wall
    with open(out, "w") as fh:
        json.dump({"tests": _rows, "files": files, "total_cpu": _cpu()}, fh)

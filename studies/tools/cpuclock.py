"""pytest plugin: the CPU seconds of each test (this process and the children it waited for, set-up and
teardown included), written as JSON to $CPUCLOCK_OUT at the end of the run ({"tests": [[nodeid, cpu_s, wall_s],
...], "files": {path: [cpu_s, wall_s]}, "total_cpu": s}) and, with $CPUCLOCK_LIVE, one line per test as it
ends. CPU seconds hardly depend on the machine's load, wall seconds do (studies/ci-time.md).

Run under ``studies/tools/cgcpu.sh`` (a cpuacct cgroup of its own), each row also gets the CPU of every process
of the run during the test, those not waited for included (a Ray cluster's GCS, raylet, agents and workers):
[nodeid, cpu_s, wall_s, tree_s]; the files get [cpu_s, wall_s, tree_s].

    CPUCLOCK_OUT=cpu.json PYTHONPATH=studies/tools python -m pytest -p cpuclock tests/cli -q
    CPUCLOCK_OUT=cpu.json PYTHONPATH=studies/tools studies/tools/cgcpu.sh python -m pytest -p cpuclock tests/batch -q
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import defaultdict

import pytest

_rows: list[tuple] = []


def _cgroup_usage_file() -> str | None:
    """This process's cpuacct cgroup's usage file (ns), unless it is the machine's root group."""
    try:
        for line in open("/proc/self/cgroup"):
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if "cpuacct" in controllers.split(",") and path not in ("", "/"):
                return f"/sys/fs/cgroup/cpuacct{path}/cpuacct.usage"
    except OSError:
        pass
    return None


_CGROUP = _cgroup_usage_file()


def _tree() -> float:
    """CPU seconds of every process in this run's cgroup so far (0 outside one)."""
    if _CGROUP is None:
        return 0.0
    with open(_CGROUP) as fh:
        return int(fh.read()) / 1e9


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, wall, tree = _cpu(), time.monotonic(), _tree()
    yield
    row = (item.nodeid, _cpu() - cpu, time.monotonic() - wall)
    _rows.append(row if _CGROUP is None else (*row, _tree() - tree))
    live = os.environ.get("CPUCLOCK_LIVE")
    if live:
        with open(live, "a") as fh:
            fh.write(json.dumps(_rows[-1]) + "\n")


def pytest_sessionfinish(session):
    out = os.environ.get("CPUCLOCK_OUT")
    if not out:
        return
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for nodeid, *values in _rows:
        for k, value in enumerate(values):
            files[nodeid.split("::")[0]][k] += value
    with open(out, "w") as fh:
        json.dump({"tests": _rows, "files": files, "total_cpu": _cpu(), "total_tree": _tree()}, fh)

"""Read exported TRC files with real OpenSim (``opensim`` 4.6 from PyPI, in its own venv) — issue #22 item 7.

Slow and optional: set ``POSETRACKER_OPENSIM_PYTHON`` to a Python that can ``import opensim`` (e.g.
``python3 -m venv /tmp/osimvenv && /tmp/osimvenv/bin/pip install opensim``); the test skips otherwise.
Run as a script under that Python, this file is the OpenSim side: ``python test_trc_opensim.py FILE.trc ...``
prints, per file, the rows and columns ``opensim.TimeSeriesTableVec3`` read, how many values are nan, the first
line as OpenSim keeps it (its ``header`` metadata) and each marker's lowest Y.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

OPENSIM_ENV = "POSETRACKER_OPENSIM_PYTHON"


def _opensim_side(paths: list[str]) -> None:  # pragma: no cover - runs under the opensim Python
    import math

    import opensim

    out = {}
    for p in paths:
        table = opensim.TimeSeriesTableVec3(p)
        values = [table.getRowAtIndex(r)[c] for r in range(table.getNumRows()) for c in range(table.getNumColumns())]
        ys = [[table.getRowAtIndex(r)[c].get(1) for r in range(table.getNumRows())] for c in range(table.getNumColumns())]
        out[p] = {"rows": table.getNumRows(), "columns": table.getNumColumns(),
                  "labels": list(table.getColumnLabels()),
                  "nan": sum(1 for v in values if any(math.isnan(v.get(i)) for i in range(3))),
                  "header": table.getTableMetaDataAsString("header"),
                  "min_y": [min((y for y in col if not math.isnan(y)), default=math.nan) for col in ys]}
    print(json.dumps(out))


if __name__ == "__main__":  # pragma: no cover
    _opensim_side(sys.argv[1:])
    sys.exit(0)


import numpy as np  # noqa: E402
import pytest  # noqa: E402

from posetracker.export import get_exporter  # noqa: E402
from posetracker.types import PoseSequence  # noqa: E402
from test_bvh_synthetic import make_sequence  # noqa: E402


@pytest.mark.slow
def test_opensim_reads_every_trc_of_a_crowd(tmp_path):
    """Two people, one absent for part of the clip and one joint missing: every file reads, with nan there."""
    python = os.environ.get(OPENSIM_ENV)
    if not python:
        pytest.skip(f"set {OPENSIM_ENV} to a Python with opensim")
    seq = make_sequence(40, people=2, seed=8)
    frames = []
    for f in seq.frames:
        if 10 <= f.index < 25:  # person 1 leaves for 15 frames
            f = f.select(np.array([True, False]))
        elif f.index == 30:  # a missing wrist
            w = f.world.copy()
            w[0, seq.skeleton.index("left_wrist")] = np.nan
            f = type(f)(f.index, f.timestamp, f.keypoints, f.confidence, f.scores, f.track_ids, f.image_size, w)
        frames.append(f)
    seq = PoseSequence(frames, seq.fps, seq.skeleton, seq.metadata)
    files = [str(p) for p in get_exporter("trc").write(seq, tmp_path / "crowd.trc")]
    assert len(files) == 2
    done = subprocess.run([python, str(Path(__file__).resolve()), *files], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    read = json.loads(done.stdout.strip().splitlines()[-1])
    for p in files:
        assert read[p]["rows"] == 40 and read[p]["columns"] >= 17, read[p]
    assert read[files[1]]["nan"] >= 15 * 17 and read[files[0]]["nan"] >= 1

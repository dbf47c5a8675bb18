"""The several-camera result in the tools it is made for (issue #48): OpenSim 4.6 reads its TRC (on the
calibration's floor, the stature on the first line) and Blender 4.5 imports its BVH (the bones in the
triangulated metres, the feet on the floor).

Slow and optional: 30 frames of the 4-view trial in ../shared are tracked (skipped when absent); OpenSim from
``POSETRACKER_OPENSIM_PYTHON`` (else /tmp/osimvenv/bin/python, see test_trc_opensim.py), Blender from
``POSETRACKER_BPY_PYTHON`` (else /opt/bpyvenv/bin/python, see test_bvh_blender.py); each test skips without its
tool.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from test_bvh_blender import BLENDER_ENV, run_blender
from test_trc_opensim import OPENSIM_ENV

FRAMES = 30


def _tool(env: str, default: str) -> str:
    python = os.environ.get(env) or (default if Path(default).exists() else "")
    if not python:
        pytest.skip(f"set {env} to a Python with the tool")
    return python


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    """The trial's first FRAMES frames of its 4 views, processed with its calibration -> (folder, result JSON)."""
    import cv2

    from conftest import shared_path
    from posetracker.cli import main

    folder = shared_path("data", "video", "multiview_pose2sim_multiperson")
    tmp = tmp_path_factory.mktemp("trial")
    views = []
    for i in (1, 2, 3, 4):
        cap = cv2.VideoCapture(str(folder / f"cam0{i}.mp4"))
        ok, img = cap.read()
        h, w = img.shape[:2]
        out = cv2.VideoWriter(str(tmp / f"cam0{i}.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), 60.0, (w, h))
        for _ in range(FRAMES):
            out.write(img)
            ok, img = cap.read()
        out.release()
        cap.release()
        views.append(str(tmp / f"cam0{i}.mp4"))
    result = tmp / "trial.json"
    assert main(["process", *views, "--calibration", str(folder / "calibration.qca.txt"), "--out", str(result)]) == 0
    return tmp, result


@pytest.mark.slow
def test_opensim_reads_the_multiview_trc(trial):
    python = _tool(OPENSIM_ENV, "/tmp/osimvenv/bin/python")
    from posetracker.cli import main

    tmp, result = trial
    assert main(["export", str(result), "--format", "trc", "--origin", "floor", "--out", str(tmp / "t.trc")]) == 0
    files = sorted(str(p) for p in tmp.glob("t_person*.trc"))
    assert len(files) == 2
    script = Path(__file__).resolve().parents[1] / "export" / "test_trc_opensim.py"
    done = subprocess.run([python, str(script), *files], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    read = json.loads(done.stdout.strip().splitlines()[-1])
    doc = json.loads(result.read_text())
    people, frames = doc["metadata"]["people"], len(doc["frames"])  # the frames every view saw (synchronised)
    assert frames >= FRAMES - 2
    for n, p in enumerate(files):
        table = read[p]
        assert table["rows"] == frames and table["columns"] == 17
        assert f"stature_m={people[str(n)]['stature_m']:.3f}" in table["header"]
        assert "stature_source=multi-view" in table["header"]
        labels = table["labels"]
        ankle = min(table["min_y"][labels.index("left_ankle")], table["min_y"][labels.index("right_ankle")])
        assert 20 < ankle < 120, ankle  # mm above the calibration's floor: an ankle joint above a standing sole


@pytest.mark.slow
def test_blender_imports_the_multiview_bvh(trial, tmp_path):
    python = _tool(BLENDER_ENV, "/opt/bpyvenv/bin/python")
    from posetracker.cli import main

    tmp, result = trial
    assert main(["export", str(result), "--format", "bvh", "--out", str(tmp / "b.bvh")]) == 0
    doc = json.loads(result.read_text())
    people, frames = doc["metadata"]["people"], len(doc["frames"])
    for n in (0, 1):
        res = run_blender(python, tmp / f"b_person{n}.bvh", tmp_path / f"blender{n}.json")
        assert len(res["bones"]) == 19 and res["frame_start"] == 1 and res["frame_end"] == frames
        assert res["fps"] == pytest.approx(60.0, rel=1e-3)
        lengths = np.array(res["lengths"])  # (frames, bones) BVH centimetres
        assert np.ptp(lengths, axis=0).max() < 1e-3
        shin = lengths[0, res["bones"].index("LeftLeg")]  # knee -> ankle
        assert shin == pytest.approx(100 * people[str(n)]["bones_m"]["left_knee-left_ankle"], abs=1.0)
        heads = np.array(res["heads"])  # (frames, bones, 3) Blender Z up = BVH Y, cm
        feet = heads[:, [res["bones"].index("LeftFoot"), res["bones"].index("RightFoot")], 2]
        assert 2.0 < feet.min() < 12.0  # the ankles stand an ankle height above the floor (Z = 0)

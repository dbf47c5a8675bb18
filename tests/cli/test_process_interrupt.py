"""`posetracker process` keeps its work: on Ctrl-C it writes what it tracked; when the output cannot be
written at the end of a long run (disk full) it keeps the poses elsewhere and says where."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from conftest import REPO
from posetracker.export import ExportError, read_sequence
from sample_clips import short_clip

SAMPLE = str(REPO / "assets" / "sample_dance.mp4")


def test_ctrl_c_writes_the_frames_tracked_so_far(tmp_path):
    out = tmp_path / "poses.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "posetracker", "process", "lavfi:testsrc2=duration=60:size=320x240:rate=30",
                             "--out", str(out), "--mode", "live"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    started = proc.stderr.readline()  # the model loads (~3 s here, longer on a busy machine), then tracking starts
    while started and not started.startswith("tracking lavfi:"):  # warnings may come first
        started = proc.stderr.readline()
    assert started, "tracking never started"
    time.sleep(3)  # tracking runs at ~40 fps: 1,800 frames take ~45 s
    assert proc.poll() is None, "finished before the interrupt"
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130, err
    assert "interrupted" in err and str(out) in err
    seq = read_sequence(out)
    assert len(seq) > 0 and "interrupted" in seq.metadata["incomplete"]


def test_an_unwritable_output_keeps_the_poses_elsewhere(tmp_path, capsys, monkeypatch):
    from posetracker.cli import main
    from posetracker.export import get_exporter

    csv = get_exporter("csv")

    def disk_full(*args, **kwargs):
        raise ExportError("cannot write poses.csv: [Errno 28] No space left on device")

    monkeypatch.setattr(type(csv), "write", disk_full)
    # 30 of the sample's frames (issue #50 item 6 / #51: its 120 took ~8 s on two busy cores): every one is kept
    clip = short_clip(tmp_path / "walk.mp4", frames=30)
    assert main(["process", str(clip), "--out", str(tmp_path / "poses.csv")]) == 1
    err = capsys.readouterr().err
    kept = tmp_path / "poses.partial.poses.json"
    assert "No space left" in err and str(kept) in err
    assert len(read_sequence(kept)) == 30

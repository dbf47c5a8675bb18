"""posetracker batch (issue #24): every video of files, folders and globs on a local Ray cluster, resumable,
one bad file never stopping the batch; outputs identical to posetracker process."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest

from conftest import REPO
from posetracker.batch import MANIFEST, BatchError, BatchSettings, collect_inputs, read_manifest, run_batch
from posetracker.cli import main

# Ray is not imported here: posetracker.batch sets it up before its first import (a local cluster on loopback)
if importlib.util.find_spec("ray") is None:
    pytest.skip("ray is not installed (the batch extra)", allow_module_level=True)
SAMPLE = REPO / "assets" / "sample_dance.mp4"


def short_clip(path: Path, frames: int = 10, start: int = 0) -> Path:
    """The sample clip's frames start..start+frames, re-encoded (a small real video with a dancer)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(SAMPLE)) as src:
        images = [f.to_ndarray(format="rgb24") for _, f in zip(range(start + frames), src.decode(video=0))][start:]
    with av.open(str(path), "w") as out:
        st = out.add_stream("mpeg4", rate=30)
        st.height, st.width = images[0].shape[:2]
        st.pix_fmt = "yuv420p"
        for im in images:
            out.mux(st.encode(av.VideoFrame.from_ndarray(im, format="rgb24")))
        out.mux(st.encode())
    return path


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("archive")
    short_clip(root / "clinic" / "a" / "walk.mp4")
    short_clip(root / "clinic" / "b" / "turn.mp4", start=20)
    (root / "clinic" / "b" / "broken.mp4").write_bytes(b"\x00not a video" * 200)
    (root / "clinic" / "notes.txt").write_text("not a video, not an input")
    return root


def test_inputs_from_folders_files_and_globs(archive):
    got = [(str(i.rel)) for i in collect_inputs([str(archive / "clinic")])]
    assert got == ["a/walk.mp4", "b/broken.mp4", "b/turn.mp4"]
    got = [str(i.rel) for i in collect_inputs([str(archive / "clinic" / "*" / "*.mp4"), str(archive / "clinic" / "a" / "walk.mp4")])]
    assert got == ["a/walk.mp4", "b/broken.mp4", "b/turn.mp4"]  # each video once
    with pytest.raises(BatchError, match="input not found"):
        collect_inputs([str(archive / "missing")])
    with pytest.raises(BatchError, match="no file matches"):
        collect_inputs([str(archive / "*.mkv")])


def test_local_ray_batch_matches_process_reports_the_bad_file_and_resumes(archive, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["batch", str(archive / "clinic"), "--out", str(out), "--format", "csv", "json", "--workers", "2"])
    assert code == 1  # one input failed
    err = capsys.readouterr().err
    assert "2 processed, 0 already done, 1 failed" in err and "broken.mp4" in err
    records = read_manifest(out)
    assert {Path(k).name: v["status"] for k, v in records.items()} == {"walk.mp4": "done", "turn.mp4": "done",
                                                                      "broken.mp4": "failed"}
    bad = records[str((archive / "clinic" / "b" / "broken.mp4").resolve())]
    assert "not a video" in bad["error"] and bad["outputs"] == []
    for rec in records.values():
        assert {"input", "size", "sha256", "model", "settings", "status", "frames", "seconds", "error"} <= set(rec)
    # the same as posetracker process, byte for byte
    for rel in ("a/walk", "b/turn"):
        ref = tmp_path / f"{Path(rel).name}.csv"
        assert main(["process", str(archive / "clinic" / f"{rel}.mp4"), "--out", str(ref)]) == 0
        assert (out / f"{rel}.poses.csv").read_bytes() == ref.read_bytes()
        assert json.loads((out / f"{rel}.poses.json").read_text())["frames"]
    lines = (out / MANIFEST).read_text().splitlines()
    # a re-run skips what is done, redoes the failed file; a changed video and a lost output are redone
    summary = run_batch([str(archive / "clinic")], out, BatchSettings(formats=("csv", "json")), workers=2)
    assert (summary.done, summary.skipped, len(summary.failed)) == (0, 2, 1)
    short_clip(archive / "clinic" / "b" / "turn.mp4", start=40)
    (out / "a" / "walk.poses.json").unlink()
    summary = run_batch([str(archive / "clinic")], out, BatchSettings(formats=("csv", "json")), workers=2)
    assert (summary.done, summary.skipped, len(summary.failed)) == (2, 0, 1)
    assert len((out / MANIFEST).read_text().splitlines()) == len(lines) + 1 + 3
    # other settings are other work
    summary = run_batch([str(archive / "clinic" / "a")], out, BatchSettings(formats=("csv", "json"), mode="live"), workers=1)
    assert summary.done == 1 and summary.skipped == 0


def test_a_killed_worker_s_video_is_redone(tmp_path):
    """Ray retries a task whose worker dies: kill the worker mid-video, the video still comes out done."""
    import signal
    import threading
    import time

    short_clip(tmp_path / "in" / "long.mp4", frames=60)
    killed: list[int] = []

    def kill_the_worker() -> None:
        end = time.time() + 60
        while time.time() < end and not killed:
            ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
            pids = [int(line.split()[0]) for line in ps.splitlines() if "ray::process_file" in line]
            if pids:
                time.sleep(0.5)  # it is loading the model or tracking
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_worker)
    killer.start()
    summary = run_batch([str(tmp_path / "in")], tmp_path / "out", workers=1)
    killer.join()
    assert killed and summary.done == 1 and not summary.failed
    assert [r["status"] for r in read_manifest(tmp_path / "out").values()] == ["done"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(shutil.which("ray") is None, reason="the ray command is not installed")
def test_batch_on_a_ray_address(archive, tmp_path):
    """A separate multi-process Ray cluster (head started here, on the loopback interface), joined by address."""
    port = _free_port()
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled"}
    subprocess.run(["ray", "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                    "--disable-usage-stats"], env=env, check=True, capture_output=True, timeout=120)
    try:  # the batch in its own process: Ray reads these settings when it is first imported
        done = subprocess.run([sys.executable, "-m", "posetracker", "batch", str(archive / "clinic" / "a"),
                               "--out", str(tmp_path / "out"), "--address", f"127.0.0.1:{port}"],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "1 processed, 0 already done, 0 failed" in done.stderr
        assert (tmp_path / "out" / "walk.poses.csv").stat().st_size > 0
    finally:
        subprocess.run(["ray", "stop", "--force"], env=env, capture_output=True, timeout=120)


def test_unusable_requests_fail_before_any_work(tmp_path, capsys):
    assert main(["batch", str(tmp_path / "nothing"), "--out", str(tmp_path / "o")]) == 2
    assert "input not found" in capsys.readouterr().err
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "readme.txt").write_text("x")
    assert main(["batch", str(tmp_path / "in"), "--out", str(tmp_path / "o")]) == 2
    assert "no video" in capsys.readouterr().err
    assert main(["batch", str(SAMPLE), "--out", str(tmp_path / "o"), "--format", "nope"]) != 0

"""posetracker batch (issue #24): every video of files, folders and globs on a local Ray cluster, resumable,
one bad file never stopping the batch; outputs identical to posetracker process."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest

from posetracker.batch import (MANIFEST, WHOLE, BatchError, BatchSettings, Chunk, collect_inputs, finish_chunks,
                               plan_chunks, process_file, read_manifest, run_batch)
from posetracker.cli import main
from sample_clips import SAMPLE, short_clip

# Ray is not imported here: posetracker.batch sets it up before its first import (a local cluster on loopback)
if importlib.util.find_spec("ray") is None:
    pytest.skip("ray is not installed (the batch extra)", allow_module_level=True)


def pids_running(task: str) -> list[int]:
    """Processes whose command line names ``task`` (Ray workers title themselves ``ray::TASK``), from /proc:
    a minimal Debian has no ``ps``."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and task.encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:  # it ended meanwhile
            pass
    return pids


def two_dancers(path: Path, frames: int = 90, enters: int = 45) -> Path:
    """Two dancers side by side at the sample's scale (its middle 288 columns, where the dancer is): the
    sample's frames on the left, its frames 30 on and mirrored on the right from frame ``enters`` (a plain
    background before)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(SAMPLE)) as src:
        images = [f.to_ndarray(format="rgb24")[:, 144:432] for _, f in zip(range(frames + 30), src.decode(video=0))]
    with av.open(str(path), "w") as out:
        st = out.add_stream("mpeg4", rate=30)
        st.height, st.width = images[0].shape[0], 2 * images[0].shape[1]
        st.pix_fmt = "yuv420p"
        for t in range(frames):
            right = images[t + 30][:, ::-1] if t >= enters else np.full_like(images[0], images[0][5, 5])
            both = np.ascontiguousarray(np.concatenate([images[t], right], 1))
            out.mux(st.encode(av.VideoFrame.from_ndarray(both, format="rgb24")))
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


class SharedRay:
    """One local Ray cluster for the batch runs of this module whose subject is not Ray's own start (issue #50
    item 6 / #51): ``run_batch`` joins a cluster that is already up (``ray.is_initialized``) and leaves it
    running, so each such run skips a cluster start and stop (20-30 s on two busy cores) and its workers' model
    load (~8 s). Started on first use as ``run_batch`` starts one (``batch.ray_start``: a reaper, the workers at
    the tests' priority, a start that timed out tried again), with one CPU: one worker process at a time, each
    importing torch and loading the models once (~4 CPU s; a second CPU added a worker that paid it too, and
    the two kills below a replacement each either way); stopped at the end of the module or before a test
    that needs no Ray in this process. Its ``address`` is the cluster a ``--address`` run joins from a process
    of its own. The runs that check the batch's own start (the CLI run of
    ``test_local_ray_batch_...``, the killed driver) still start their own."""

    def __init__(self) -> None:
        self.reaper = None

    def __call__(self) -> None:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # as run_batch: read when Ray is imported
        import ray

        if not ray.is_initialized():
            from posetracker.batch.ray_start import start_ray

            self.reaper = start_ray(ray, None, 1)

    @property
    def address(self) -> str:
        """HOST:PORT of the cluster (started if it is not up): what ``posetracker batch --address`` joins."""
        self()
        import ray

        return ray.get_runtime_context().gcs_address

    def stop(self) -> None:
        if "ray" in sys.modules:
            import ray

            if ray.is_initialized():
                ray.shutdown()
        if self.reaper is not None:
            from posetracker.batch.reaper import stop_reaper

            stop_reaper(self.reaper)
            self.reaper = None


@pytest.fixture(scope="module")
def shared_ray():
    """Call it to have the module's Ray cluster up (see SharedRay)."""
    cluster = SharedRay()
    yield cluster
    cluster.stop()


def test_inputs_from_folders_files_and_globs(archive):
    got = [(str(i.rel)) for i in collect_inputs([str(archive / "clinic")])]
    assert got == ["a/walk.mp4", "b/broken.mp4", "b/turn.mp4"]
    got = [str(i.rel) for i in collect_inputs([str(archive / "clinic" / "*" / "*.mp4"), str(archive / "clinic" / "a" / "walk.mp4")])]
    assert got == ["a/walk.mp4", "b/broken.mp4", "b/turn.mp4"]  # each video once
    with pytest.raises(BatchError, match="input not found"):
        collect_inputs([str(archive / "missing")])
    with pytest.raises(BatchError, match="no file matches"):
        collect_inputs([str(archive / "*.mkv")])


def test_local_ray_batch_matches_process_reports_the_bad_file_and_resumes(archive, tmp_path, capsys, shared_ray):
    out = tmp_path / "out"
    shared_ray.stop()  # the CLI run starts and stops a local cluster of its own
    code = main(["batch", str(archive / "clinic"), "--out", str(out), "--format", "csv", "json", "--workers", "2"])
    import ray  # after the batch's first import of it (posetracker.batch sets Ray's environment before)

    assert not ray.is_initialized()  # the CLI run stopped its cluster
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
    shared_ray()  # the re-runs below: on the module's cluster
    # a re-run skips what is done, redoes the failed file; a changed video and a lost output are redone
    summary = run_batch([str(archive / "clinic")], out, BatchSettings(formats=("csv", "json")), workers=1)
    assert (summary.done, summary.skipped, len(summary.failed)) == (0, 2, 1)
    short_clip(archive / "clinic" / "b" / "turn.mp4", start=40)
    (out / "a" / "walk.poses.json").unlink()
    summary = run_batch([str(archive / "clinic")], out, BatchSettings(formats=("csv", "json")), workers=1)
    assert (summary.done, summary.skipped, len(summary.failed)) == (2, 0, 1)
    assert len((out / MANIFEST).read_text().splitlines()) == len(lines) + 1 + 3
    # other settings are other work
    summary = run_batch([str(archive / "clinic" / "a")], out, BatchSettings(formats=("csv", "json"), mode="live"), workers=1)
    assert summary.done == 1 and summary.skipped == 0


def test_a_killed_worker_s_video_is_redone(tmp_path, shared_ray):
    """Ray retries a task whose worker dies: kill the worker mid-video, the video still comes out done. On the
    module's cluster with settings no other run of it uses (max_people 3), so the worker opens a session of its
    own for the video: the kill lands while it loads the model or tracks, as on a cluster of its own."""
    import signal
    import threading
    import time

    short_clip(tmp_path / "in" / "long.mp4", frames=60)
    killed: list[int] = []

    def kill_the_worker() -> None:
        end = time.time() + 60
        while time.time() < end and not killed:
            pids = pids_running("ray::process_file")
            if pids:
                time.sleep(0.5)  # it is loading the model or tracking: make sure it still is, then kill
                try:
                    if "process_file" in Path(f"/proc/{pids[0]}/cmdline").read_bytes().decode(errors="replace"):
                        os.kill(pids[0], signal.SIGKILL)
                        killed.append(pids[0])
                except OSError:
                    pass
            time.sleep(0.05)

    shared_ray()
    killer = threading.Thread(target=kill_the_worker)
    killer.start()
    summary = run_batch([str(tmp_path / "in")], tmp_path / "out", BatchSettings(max_people=3), workers=1)
    killer.join()
    assert killed and summary.done == 1 and not summary.failed
    assert [r["status"] for r in read_manifest(tmp_path / "out").values()] == ["done"]


def test_a_chunk_whose_worker_dies_past_its_retries_fails_only_its_video(tmp_path, shared_ray):
    """A chunk task killed with no retries left: its video is recorded failed (naming the chunk, nothing of
    it written), the other video of the batch is done, and a re-run redoes the failed one only."""
    import signal
    import threading
    import time

    clip = short_clip(tmp_path / "in" / "long.mp4", frames=40)  # what it shows does not matter here
    short_clip(tmp_path / "in" / "short.mp4")
    settings = BatchSettings(formats=("json",), chunk_s=1.0, chunk_overlap_s=0.2)  # long.mp4: chunks of 20 frames
    killed: list[int] = []

    def kill_a_chunk_worker() -> None:
        end = time.time() + 120
        while time.time() < end and not killed:
            pids = pids_running("ray::track_chunk")
            for pid in pids[:1]:  # a worker moves on to the next task: make sure it still runs a chunk, then kill
                try:
                    still = "track_chunk" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
                    if still:
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                except OSError:
                    pass
            time.sleep(0.02)

    shared_ray()  # the failure below proves the kill landed in a running chunk, warm worker or not
    killer = threading.Thread(target=kill_a_chunk_worker)
    killer.start()
    summary = run_batch([str(tmp_path / "in")], tmp_path / "out", settings, workers=1, max_retries=0)
    killer.join()
    assert killed and summary.done == 1 and len(summary.failed) == 1
    (lost,) = summary.failed
    assert lost["input"] == str(clip) and lost["chunks"] == 2
    assert re.match(r"chunk [12] of 2 \(from frame \d+\): worker lost: \w+", lost["error"]), lost["error"]
    assert not (tmp_path / "out" / "long.poses.json").exists() and (tmp_path / "out" / "short.poses.json").exists()
    again = run_batch([str(tmp_path / "in")], tmp_path / "out", settings, workers=1)
    assert again.done == 1 and again.skipped == 1 and not again.failed
    assert read_manifest(tmp_path / "out")[str(clip)]["status"] == "done"


def test_the_camera_is_chosen_as_process_chooses_it(tmp_path):
    """fov_deg: given degrees are the user's; auto without a tag tracks at 60 and asks the people after; the
    JSON says which; nonsense is refused when the settings are made."""
    from posetracker.export.json_io import read_sequence

    clip = short_clip(tmp_path / "in" / "a.mp4", frames=8)
    for fov, source in ((45.0, "user"), ("auto", None)):
        out = tmp_path / f"out-{fov}"
        rec = process_file(str(clip), "a.mp4", str(out), BatchSettings(formats=("json",), fov_deg=fov), "m", "s")
        assert rec["status"] == "done", rec["error"]
        camera = read_sequence(out / "a.poses.json").metadata["camera"]
        if source == "user":
            assert camera == {"fov_deg": 45.0, "source": "user", "detail": "--fov"}
        else:  # one dancer seen level: the people do not fix it
            assert camera["source"] == "default" and camera["fov_deg"] == 60.0 and camera["detail"]
    for bad in ("wide", 0.0, 200.0):
        with pytest.raises(ValueError, match="fov_deg"):
            BatchSettings(fov_deg=bad)


def test_killing_the_driver_loses_at_most_the_videos_in_flight(tmp_path, shared_ray):
    """SIGKILL the ``posetracker batch`` process once the first of four videos is recorded: the manifest holds
    whole records only, every output on disk belongs to a recorded video, none is half-written, and the re-run
    skips what was done and does the rest. No process of its local Ray cluster outlives it (issue #50 item 3:
    the raylet's DashboardAgent and RuntimeEnvAgent used to; ``batch.reaper``)."""
    import signal
    import time

    from posetracker.batch.reaper import _processes, descendants

    for k in range(4):
        short_clip(tmp_path / "in" / f"v{k}.mp4", frames=12, start=10 * k)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "posetracker", "batch", str(tmp_path / "in"), "--out", str(out), "--format", "json",
           "--workers", "1"]
    errors = tmp_path / "driver.err"
    with errors.open("w") as err:
        driver = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        end = time.time() + 240
        while time.time() < end and not read_manifest(out) and driver.poll() is None:  # a driver that ended: no wait
            time.sleep(0.05)
        assert read_manifest(out), f"no video finished in time: {errors.read_text()[-1500:]}"
        below = descendants(driver.pid)
        assert any("ray" in _cmdline(p) for p in below), "a local Ray cluster below the batch"
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    end = time.time() + 15
    while time.time() < end and (left := [p for p, start in below.items() if _processes().get(p, (0, -1))[1] == start]):
        time.sleep(0.2)
    assert not left, f"left running after the batch was killed: {[_cmdline(p) for p in left]}"
    lines = (out / MANIFEST).read_text().splitlines()
    records = [json.loads(line) for line in lines]  # a torn line would fail here
    assert 1 <= len(records) < 4 and all(r["status"] == "done" for r in records)
    done = {Path(p).name for r in records for p in r["outputs"]}
    for path in out.glob("*.json"):
        assert path.name in done, f"{path.name} is on disk but not recorded"
        json.loads(path.read_text())  # whole
    shared_ray()  # the re-run: on the module's cluster
    again = run_batch([str(tmp_path / "in")], out, BatchSettings(formats=("json",)), workers=1)
    assert again.skipped == len(records) and again.done == 4 - len(records) and not again.failed
    assert sorted(p.name for p in out.glob("*.json")) == [f"v{k}.poses.json" for k in range(4)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_unusable_requests_fail_before_any_work(tmp_path, capsys):
    assert main(["batch", str(tmp_path / "nothing"), "--out", str(tmp_path / "o")]) == 2
    assert "input not found" in capsys.readouterr().err
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "readme.txt").write_text("x")
    assert main(["batch", str(tmp_path / "in"), "--out", str(tmp_path / "o")]) == 2
    assert "no video" in capsys.readouterr().err
    assert main(["batch", str(SAMPLE), "--out", str(tmp_path / "o"), "--format", "nope"]) != 0


def test_long_videos_are_planned_in_chunks_with_overlap():
    """Offline, a video over chunk_s is split into equal chunks, each tracked with the overlap on both sides;
    the default leaves clips of a few minutes whole, and so do live mode, chunk_s 0 and an unknown length."""
    assert plan_chunks(30 * 300, 30.0, BatchSettings()) == [WHOLE]  # 5 minutes: whole
    chunks = plan_chunks(30 * 600 + 1, 30.0, BatchSettings())  # just over 10 minutes: three chunks of ~3.3
    assert [(c.start, c.stop, c.first, c.last) for c in chunks] == [(0, 6000, 0, 6060), (6000, 12001, 5940, 12061),
                                                                   (12001, None, 11941, None)]
    assert plan_chunks(90, 30.0, BatchSettings(chunk_s=1.0, chunk_overlap_s=0.3)) == [
        Chunk(0, 0, 30, 9), Chunk(1, 30, 60, 9), Chunk(2, 60, None, 9)]
    for settings in (BatchSettings(mode="live"), BatchSettings(chunk_s=0)):
        assert plan_chunks(30 * 3600, 30.0, settings) == [WHOLE]
    assert plan_chunks(None, 30.0, BatchSettings()) == [WHOLE]
    for bad in ({"chunk_s": -1.0}, {"chunk_s": 10.0, "chunk_overlap_s": 0.0}, {"chunk_s": 1.0, "chunk_overlap_s": 1.0}):
        with pytest.raises(ValueError, match="chunk"):
            BatchSettings(**bad)


def test_a_failed_chunk_fails_its_input_with_the_chunk_s_error(tmp_path):
    video = tmp_path / "long.mp4"
    video.write_bytes(b"stands in for the video (only its size is read)")
    chunks = [Chunk(0, 0, 30, 9), Chunk(1, 30, 60, 9), Chunk(2, 60, None, 9)]
    ok = {"sequence": None, "seconds": 1.0, "error": ""}
    bad = {"sequence": None, "seconds": 0.5, "error": "CorruptVideoError: the video data is damaged"}
    rec = finish_chunks(str(video), "long.mp4", str(tmp_path / "out"), BatchSettings(), "m", "s", chunks, ok, bad, ok)
    assert rec["status"] == "failed" and rec["outputs"] == [] and rec["chunks"] == 3
    assert rec["error"] == "chunk 2 of 3 (from frame 21): CorruptVideoError: the video data is damaged"
    assert rec["seconds"] >= 2.5 and not (tmp_path / "out").exists()


def test_a_chunked_video_matches_the_one_piece_run(tmp_path, shared_ray):
    """Three chunks on a local Ray cluster, joined: the same frames, the same people with the same ids as the
    video tracked in one piece (the second dancer arrives in the middle chunk; the third chunk tracks both from
    its start and reads the mirrored dancer's shoulders the other way round, swapped back by the join); the poses
    within 1e-3 px inside the first chunk, within 1e-3 px for most frames elsewhere and the same pose (OKS >= 0.95) in
    all; the frames bar counts every frame once."""
    from posetracker.export.json_io import read_sequence
    from posetracker.oks import joint_sigmas, keypoint_bbox_area
    from posetracker.tracking import oks_matrix

    clip = two_dancers(tmp_path / "in" / "two.mp4")
    whole = process_file(str(clip), "two.mp4", str(tmp_path / "whole"), BatchSettings(formats=("json",), chunk_s=0),
                         "m", "s")
    assert whole["status"] == "done" and whole["chunks"] == 1, whole["error"]
    settings = BatchSettings(formats=("json",), chunk_s=1.0, chunk_overlap_s=0.3)  # chunks [0, 30) [30, 60) [60, 90)
    frames_seen: list[tuple[int, int]] = []
    shared_ray()
    summary = run_batch([str(clip)], tmp_path / "out", settings, workers=1,
                        frame_progress=lambda done, total: frames_seen.append((done, total)))
    assert summary.done == 1 and not summary.failed and summary.frames == 90
    (rec,) = read_manifest(tmp_path / "out").values()
    assert rec["status"] == "done" and rec["chunks"] == 3 and rec["frames"] == 90
    assert frames_seen[-1] == (90, 90) and [d for d, _ in frames_seen] == sorted(d for d, _ in frames_seen)

    one = read_sequence(tmp_path / "whole" / "two.poses.json")
    joined = read_sequence(tmp_path / "out" / "two.poses.json")
    assert [f.index for f in joined.frames] == [f.index for f in one.frames] == list(range(90))
    assert [f.timestamp for f in joined.frames] == [f.timestamp for f in one.frames]
    assert one.track_ids() == [0, 1]  # the setup: both dancers tracked, the second from frame 45 or so
    sigmas = joint_sigmas(one.skeleton)
    xy_diff, z_diff, world_diff = [], [], []
    for a, b in zip(one.frames, joined.frames):
        assert sorted(a.track_ids.tolist()) == sorted(b.track_ids.tolist()), a.index
        assert len(set(b.track_ids.tolist())) == b.num_people  # no id twice in a frame
        for tid in a.track_ids.tolist():
            pa, pb = a.keypoints[a.track_ids == tid], b.keypoints[b.track_ids == tid]  # (1, K, 3)
            if a.index < 11:  # network passes (16 frames + 8 ahead) inside chunk 1; the motion solve couples every
                # frame of a track, with weights that fall fast with distance in time
                assert np.nanmax(np.abs(pa - pb)) < 1e-3, (a.index, np.nanmax(np.abs(pa - pb)))
            ok = a.confidence[a.track_ids == tid] >= 0.3
            area = keypoint_bbox_area(pa[..., :2], ok)
            assert oks_matrix(pa[..., :2], ok, area, pb[..., :2], ok, area, sigmas)[0, 0] >= 0.95, (a.index, tid)
            xy_diff.append(np.abs(pa[..., :2] - pb[..., :2]).max())
            z_diff.append(np.nanmax(np.abs(pa[..., 2] - pb[..., 2])))
            world_diff.append(np.nanmax(np.abs(a.world[a.track_ids == tid] - b.world[b.track_ids == tid])))
    # seen: median 3e-5 px; the largest, a few px, where a per-frame decision went the other way on a near-tie
    # (a hip pair swapped back for one frame in one run, spread by smoothing; a knee at the confidence cut-off).
    # z is the depth in m (~3 here): each person's one scale onto the shared floor (motion.shared_floor), fitted over
    # the track to frames that differ by those few 1e-4 px, moves all of their depths alike (seen 1.2e-4 m; 1.4e-6
    # before that step)
    assert np.median(xy_diff) < 1e-3 and np.median(z_diff) < 2e-4 and np.median(world_diff) < 1e-3
    assert max(z_diff) < 0.05 and max(world_diff) < 0.05  # m
    # a re-run finds it done
    assert run_batch([str(clip)], tmp_path / "out", settings, workers=1).skipped == 1


def test_cli_chunk_options_and_the_frames_bar(tmp_path, monkeypatch, capsys):
    """--chunk-s / --chunk-overlap-s reach the settings, run_batch gets a frames callback next to the videos one
    when stderr is a terminal (none otherwise: no count's actor for a bar nobody sees), and settings that cannot
    chunk are a usage error. A stand-in run_batch here: no Ray."""
    import io

    import posetracker.batch as batch

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    calls, counted = [], []

    def fake_run_batch(inputs, out, settings, workers=None, address=None, progress=None, frame_progress=None):
        calls.append(settings)
        counted.append(frame_progress is not None)
        if frame_progress is not None:
            frame_progress(40, 90)
            frame_progress(90, 90)
        progress({"rel": "walk.mp4", "status": "done"}, 1, 1)
        return batch.BatchSummary(done=1, frames=90)

    monkeypatch.setattr(batch, "run_batch", fake_run_batch)
    captured, terminal = sys.stderr, Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["batch", str(SAMPLE), "--out", str(tmp_path), "--chunk-s", "60", "--chunk-overlap-s", "1.5"]) == 0
    assert (calls[0].chunk_s, calls[0].chunk_overlap_s) == (60.0, 1.5)
    assert main(["batch", str(SAMPLE), "--out", str(tmp_path)]) == 0
    assert (calls[1].chunk_s, calls[1].chunk_overlap_s) == (BatchSettings.chunk_s, BatchSettings.chunk_overlap_s)
    assert counted == [True, True] and "90/90" in terminal.getvalue() and "1 processed" in terminal.getvalue()
    monkeypatch.setattr(sys, "stderr", captured)
    assert main(["batch", str(SAMPLE), "--out", str(tmp_path)]) == 0
    assert counted[2:] == [False] and "1 processed" in capsys.readouterr().err
    assert main(["batch", str(SAMPLE), "--out", str(tmp_path), "--chunk-s", "10", "--chunk-overlap-s", "0"]) == 2
    assert "chunks need an overlap" in capsys.readouterr().err and len(calls) == 3


def test_the_driver_leaves_torch_to_the_workers(tmp_path):
    """``posetracker batch`` up to its Ray start (arguments, inputs, hashes, the model's hash, chunk plans) imports no
    torch: a driver only plans and waits, and torch's import is ~2 CPU s of every batch's start (issue #51)."""
    clip = short_clip(tmp_path / "in" / "a.mp4", frames=2)
    script = ("import sys\n"
              "import posetracker.batch.driver as driver\n"
              "seen = []\n"
              "def stand_in(*args, **kwargs):\n"
              "    seen.append(sorted(m for m in ('torch', 'ray') if m in sys.modules))\n"
              "    return iter(())\n"
              "driver._run_on_ray = stand_in\n"
              "from posetracker.cli import main\n"
              f"main(['batch', {str(clip)!r}, '--out', {str(tmp_path / 'out')!r}, '--format', 'csv', 'json', 'bvh'])\n"
              "print(seen)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[[]]", done.stdout  # reached once, without torch (nor Ray: it is imported there)


def test_every_format_gets_its_own_output_name():
    """Formats that share the .csv suffix (tidy, wide, DeepLabCut, angles, gait) must not overwrite each other."""
    from posetracker.batch import output_paths
    from posetracker.export import exporters

    paths = output_paths(Path("out"), Path("a/walk.mp4"), sorted(exporters()))
    assert len(set(paths.values())) == len(paths)
    assert paths["csv"] == Path("out/a/walk.poses.csv") and paths["json"] == Path("out/a/walk.poses.json")
    assert paths["gait"] == Path("out/a/walk.poses.gait.csv") and paths["angles"] == Path("out/a/walk.poses.angles.csv")


def test_batch_on_a_ray_address(archive, tmp_path, shared_ray):
    """A running Ray cluster (the module's: a head node, its GCS on the loopback interface), joined by address
    from a ``posetracker batch`` process of its own (with the cluster's token: Ray's default token file, the
    token mode ``ray.init`` left in this environment)."""
    address = shared_ray.address
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    # the batch in its own process: Ray reads these settings when it is first imported
    done = subprocess.run([sys.executable, "-m", "posetracker", "batch", str(archive / "clinic" / "a"),
                           "--out", str(tmp_path / "out"), "--address", address],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1 processed, 0 already done, 0 failed" in done.stderr
    assert (tmp_path / "out" / "walk.poses.csv").stat().st_size > 0

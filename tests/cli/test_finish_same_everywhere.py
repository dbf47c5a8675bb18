"""One finishing step (posetracker.motion.finish) for every front end: the same clip, tracked with the same
settings by ``posetracker process``, by a batch (in-process, no Ray) and by the app's whole-file worker and
written by each as it writes (the CLI's exporter, the batch's outputs, the app's ExportJob), gives the same
JSON file byte for byte: poses, camera, encounters and metadata.

The clip is the sample's first frames with a QuickTime focal-length tag, so the camera comes from the file
(before this step the app tracked at 60 degrees and re-lifted after, the batch listed no encounters and said
its bones were raw). The metadata's ``source`` is the path each front end was given: the same path here. The
app runs with no live refiner ticked (a new user's live default, ``crop-fast``, would be added to its
whole-file run's ``crop``: another setting than the CLI's default)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from sample_clips import short_clip

FRAMES = 20
F35_MM = "26"


def tagged_clip(path: Path, frames: int = FRAMES) -> Path:
    """The sample's first ``frames`` frames re-encoded, tagged with a 35 mm-equivalent focal length."""
    return short_clip(path, frames, tags={"com.apple.quicktime.camera.focal_length.35mm_equivalent": F35_MM})


def test_process_batch_and_the_app_write_the_same_file(tmp_path, qtbot):
    from posetracker.batch import BatchSettings, process_file
    from posetracker.capture import open_source
    from posetracker.cli import main
    from posetracker.export import get_exporter
    from ui.jobs import ExportJob
    from ui.services import ModelChoice, real_session, with_camera
    from ui.workers import OfflineWorker

    clip = str(tagged_clip(tmp_path / "clip.mp4"))
    cli = tmp_path / "cli.poses.json"
    assert main(["process", clip, "--out", str(cli)]) == 0

    record = process_file(clip, "clip.mp4", str(tmp_path / "batch"), BatchSettings(formats=("json",), chunk_s=0),
                          "m", "s")
    assert record["status"] == "done", record["error"]
    batch = tmp_path / "batch" / "clip.poses.json"

    choice = ModelChoice(mode="offline", lookahead=0, refiners=())  # as MainWindow.process_whole_file builds it
    worker = OfflineWorker(partial(open_source, clip), partial(with_camera, real_session, choice))
    seq, warnings = worker._process()
    app = tmp_path / "app.poses.json"
    job = ExportJob(get_exporter("json"), seq, app)
    failed: list[str] = []
    job.signals.failed.connect(failed.append)
    job.run()
    assert not failed and app.is_file()

    doc = json.loads(cli.read_text())
    meta = doc["metadata"]
    assert meta["camera"]["source"] == "metadata" and F35_MM in meta["camera"]["detail"]  # the file's tag
    assert "encounters" in meta and meta["source"] == clip and "bones" not in meta
    assert len(doc["frames"]) == FRAMES and any(f["people"] for f in doc["frames"])
    assert batch.read_bytes() == cli.read_bytes()
    assert app.read_bytes() == cli.read_bytes()


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-q"]))

"""posetracker batch on real clips of ../shared (slow): a folder of clips on a local Ray cluster, one of them
long enough to be chunked, each output as `posetracker process` writes it (the chunked one matching its
one-piece run person for person), every input in the manifest, and a re-run that does nothing."""

from __future__ import annotations

import importlib.util
import shutil
from collections import Counter

import numpy as np
import pytest

from conftest import shared_path
from posetracker.batch import BatchSettings, process_file, read_manifest, run_batch

if importlib.util.find_spec("ray") is None:
    pytest.skip("ray is not installed (the batch extra)", allow_module_level=True)

CLIPS = {"gait/walk.mp4": "more/sports2d_demos/demo4_older_woman_walking.mp4",   # 13.4 s: 3 chunks at 5 s
         "dance/pose_1.mp4": "more/tfjs_pose_test_data/pose_1.mp4"}


@pytest.mark.slow
@pytest.mark.shared
def test_batch_of_shared_clips_with_a_chunked_one(tmp_path):
    from posetracker.export.json_io import read_sequence
    from posetracker.oks import joint_sigmas, keypoint_bbox_area
    from posetracker.tracking import oks_matrix

    root = tmp_path / "archive"
    for rel, clip in CLIPS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(shared_path("data", "video", *clip.split("/")), root / rel)
    settings = BatchSettings(formats=("json", "csv"), chunk_s=5.0)
    summary = run_batch([str(root)], tmp_path / "out", settings, workers=2)
    assert summary.done == 2 and not summary.failed, summary.failed
    manifest = read_manifest(tmp_path / "out")
    assert manifest[str(root / "gait" / "walk.mp4")]["chunks"] == 3
    assert manifest[str(root / "dance" / "pose_1.mp4")]["chunks"] == 1
    for rel in CLIPS:
        stem = (tmp_path / "out" / rel).with_suffix("")
        assert (stem.parent / f"{stem.name}.poses.csv").stat().st_size > 0

    one = process_file(str(root / "gait" / "walk.mp4"), "gait/walk.mp4", str(tmp_path / "whole"),
                       BatchSettings(formats=("json",), chunk_s=0), "m", "s")
    assert one["status"] == "done", one["error"]
    whole = read_sequence(tmp_path / "whole" / "gait" / "walk.poses.json")
    joined = read_sequence(tmp_path / "out" / "gait" / "walk.poses.json")
    assert [f.index for f in joined.frames] == [f.index for f in whole.frames]
    sigmas, scores, pairs = joint_sigmas(whole.skeleton), [], Counter()
    for a, b in zip(whole.frames, joined.frames):
        assert abs(a.num_people - b.num_people) <= 1, a.index
        for i in range(a.num_people):  # each one-piece person against the joined person most like them
            ok = a.confidence[i] >= 0.3
            area = keypoint_bbox_area(a.keypoints[i:i + 1, :, :2], ok[None])
            best = [oks_matrix(a.keypoints[i:i + 1, :, :2], ok[None], area, b.keypoints[k:k + 1, :, :2], ok[None],
                               area, sigmas)[0, 0] for k in range(b.num_people)]
            if best:
                k = int(np.argmax(best))
                scores.append(best[k])
                pairs[int(a.track_ids[i]), int(b.track_ids[k])] += 1
    assert len(scores) >= 0.95 * sum(f.num_people for f in whole.frames)
    assert np.median(scores) > 0.99 and np.mean(np.asarray(scores) > 0.9) > 0.97
    for tid in whole.track_ids():  # a person keeps one id across the chunks' joins
        theirs = {j: n for (w, j), n in pairs.items() if w == tid}
        assert max(theirs.values()) >= 0.95 * sum(theirs.values()), (tid, theirs)
    assert run_batch([str(root)], tmp_path / "out", settings, workers=2).skipped == 2

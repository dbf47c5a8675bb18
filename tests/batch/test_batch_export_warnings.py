"""A person an output format cannot take (BVH: a joint never seen) is in the video's manifest record, as the
finishing step's warnings are; it went to the worker's console as a Python warning, out of the manifest."""

from __future__ import annotations

import numpy as np

from posetracker.batch.plan import WHOLE, BatchSettings
from posetracker.batch.tasks import finish_chunks
from test_bvh_synthetic import make_sequence


def test_a_person_left_out_of_a_bvh_is_a_warning_of_the_record(tmp_path):
    seq = make_sequence(30, people=2)
    wrist = seq.skeleton.index("right_wrist")
    for frame in seq.frames:  # person 1's right wrist is never seen: the rig cannot be driven
        frame.confidence[1, wrist] = 0.0
        frame.world[1, wrist] = np.nan
    video = tmp_path / "walk.mp4"
    video.write_bytes(b"stand-in")  # only its size is read here
    record = finish_chunks(str(video), "walk.mp4", str(tmp_path / "out"), BatchSettings(formats=("bvh",)), "model",
                           "0" * 64, [WHOLE], {"sequence": seq, "camera": None, "seconds": 0.0, "error": ""})
    assert record["status"] == "done", record["error"]
    assert any(w.startswith("BVH: person 1 not exported") for w in record.get("warnings", [])), record
    assert any(o.endswith("person0.bvh") for o in record["outputs"])

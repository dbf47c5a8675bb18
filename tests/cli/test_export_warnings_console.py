"""A person a format cannot take (BVH: a joint never seen) is a ``warning:`` line on the console, as ``posetracker
export`` prints it, not Python's warning with the source line that raised it (``process cam1 cam2 --calibration
--out x.bvh`` printed ``.../views_output.py:31: ExportWarning: ...`` and ``return exporter.write(...)``)."""

from __future__ import annotations

import numpy as np

from posetracker.cli.views_output import write_views
from posetracker.export import get_exporter
from test_bvh_synthetic import make_sequence


def test_a_person_left_out_of_a_bvh_is_a_warning_line(tmp_path, capsys):
    seq = make_sequence(20, people=2)
    wrist = seq.skeleton.index("right_wrist")
    for frame in seq.frames:  # person 1's right wrist is never seen: the rig cannot be driven
        frame.confidence[1, wrist] = 0.0
        frame.world[1, wrist] = np.nan
    files = write_views(seq, ["person 0: ..."], [], get_exporter("bvh"), tmp_path / "views.bvh", False)
    err = capsys.readouterr().err
    assert [f.name for f in files] == ["views_person0.bvh", "views_person0.bvh.json"]
    assert "warning: BVH: person 1 not exported" in err
    assert "ExportWarning" not in err and ".py:" not in err

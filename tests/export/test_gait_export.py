"""The ``gait`` exporter: strides, summary and per-frame foot contact CSVs; ``process`` / ``export --format gait``."""

from __future__ import annotations

import csv
import os
import stat

import numpy as np
import pytest

from conftest import REPO
from gait_synthetic import walker
from posetracker.analysis.gait import analyse_gait
from posetracker.cli import main
from posetracker.export import ExportError, get_exporter
from posetracker.export.gait_csv import CONTACT_COLUMNS, STRIDE_COLUMNS, SUMMARY_COLUMNS
from posetracker.skeletons import load_skeleton
from posetracker.types import PoseFrame, PoseSequence


def rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def two_walkers() -> PoseSequence:
    """Person 0 walks right, person 1 walks left, in the same frames."""
    a, b = walker(seconds=4.0).seq, walker(seconds=4.0, direction=-1).seq
    frames = [PoseFrame(fa.index, fa.timestamp, np.concatenate([fa.keypoints, fb.keypoints]),
                        np.concatenate([fa.confidence, fb.confidence]), np.ones(2, np.float32),
                        np.array([0, 1], np.int64), fa.image_size) for fa, fb in zip(a.frames, b.frames)]
    return PoseSequence(frames, a.fps, a.skeleton)


def test_three_files_one_row_per_stride_summary_and_frame(tmp_path):
    seq = walker().seq
    files = get_exporter("gait").write(seq, tmp_path / "walk.csv")
    assert [f.name for f in files] == ["walk.csv", "walk.summary.csv", "walk.contacts.csv"]
    gait = analyse_gait(seq)[0]
    strides = rows(files[0])
    assert tuple(strides[0]) == STRIDE_COLUMNS and len(strides) == len(gait.strides) >= 6
    for row, s in zip(strides, gait.strides):
        assert (row["foot"], int(row["start_frame"]), int(row["end_frame"])) == (s.foot, s.start_frame, s.end_frame)
        assert float(row["stride_s"]) == pytest.approx(s.stride_s, abs=1e-4)
        assert float(row["stance_pct"]) + float(row["swing_pct"]) == pytest.approx(100.0, abs=0.11)
        assert float(row["cadence_spm"]) == pytest.approx(120 / s.stride_s, abs=0.06)
        assert float(row["knee_rom_deg"]) > 0 and row["angle_method"] == "2d"
    summary = rows(files[1])
    assert tuple(summary[0]) == SUMMARY_COLUMNS and [r["foot"] for r in summary] == ["left", "right", "both"]
    assert int(summary[2]["strides"]) == len(gait.strides)
    assert float(summary[2]["cadence_spm"]) == pytest.approx(110.0, rel=0.03)
    contacts = rows(files[2])
    assert tuple(contacts[0]) == CONTACT_COLUMNS and len(contacts) == len(seq)
    assert [int(r["frame"]) for r in contacts] == list(range(len(seq)))
    assert {r["left_contact"] for r in contacts} <= {"0", "1", ""} and {r["right_contact"] for r in contacts} >= {"0", "1"}
    for foot in ("left", "right"):
        marked = [int(r["frame"]) for r in contacts if r[f"{foot}_event"] == "heel_strike"]
        assert marked == [e.frame for e in gait.heel_strikes(foot)]
        onsets = [int(r["frame"]) for prev, r in zip(contacts, contacts[1:])
                  if prev[f"{foot}_contact"] == "0" and r[f"{foot}_contact"] == "1"]
        assert set(marked) <= set(onsets)


def test_person_option_and_everyone(tmp_path):
    seq = two_walkers()
    everyone = rows(get_exporter("gait").write(seq, tmp_path / "all.csv")[0])
    assert {r["person_id"] for r in everyone} == {"0", "1"}
    files = get_exporter("gait").write(seq, tmp_path / "one.csv", person=1)
    assert {r["person_id"] for r in rows(files[0])} == {"1"}
    assert {r["person_id"] for r in rows(files[2])} == {"1"}
    with pytest.raises(ExportError, match="no person with track id 7"):
        get_exporter("gait").write(seq, tmp_path / "x.csv", person=7)


def test_frames_without_the_person_have_no_contact_row(tmp_path):
    seq = walker(seconds=2.0).seq
    frames = [f if not 20 <= f.index < 30 else PoseFrame.empty(f.index, f.timestamp, seq.skeleton.num_joints, f.image_size)
              for f in seq.frames]
    files = get_exporter("gait").write(PoseSequence(frames, seq.fps, seq.skeleton), tmp_path / "g.csv")
    assert [int(r["frame"]) for r in rows(files[2])] == [i for i in range(len(seq)) if not 20 <= i < 30]


def test_an_animal_skeleton_is_refused_and_nothing_written(tmp_path):
    spec = load_skeleton("mouse4")
    frame = PoseFrame(0, 0.0, np.zeros((1, spec.num_joints, 3), np.float32), np.ones((1, spec.num_joints), np.float32),
                      np.ones(1, np.float32), np.zeros(1, np.int64))
    with pytest.raises(ExportError, match="gait: .*ankle"):
        get_exporter("gait").write(PoseSequence([frame], 30.0, spec), tmp_path / "m.csv")
    assert list(tmp_path.iterdir()) == []


def test_existing_side_file_needs_force_and_files_follow_the_umask(tmp_path):
    seq = walker(seconds=2.0).seq
    (tmp_path / "g.contacts.csv").write_text("keep me")
    with pytest.raises(ExportError, match="exists"):
        get_exporter("gait").write(seq, tmp_path / "g.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.contacts.csv"]
    old = os.umask(0o027)
    try:
        files = get_exporter("gait").write(seq, tmp_path / "g.csv", force=True)
    finally:
        os.umask(old)
    assert all(stat.S_IMODE(os.stat(f).st_mode) == 0o640 for f in files)


def test_export_command_default_name(tmp_path, monkeypatch):
    src = tmp_path / "walk.json"
    get_exporter("json").write(walker(seconds=3.0).seq, src)
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(src), "--format", "gait"]) == 0
    assert all((tmp_path / n).is_file() for n in ("walk.gait.csv", "walk.gait.summary.csv", "walk.gait.contacts.csv"))
    assert rows(tmp_path / "walk.gait.csv")


def test_process_command_writes_the_gait_format(tmp_path, capsys):
    clip = f"lavfi:movie={REPO / 'assets' / 'sample_dance.mp4'},trim=end_frame=12"
    assert main(["process", clip, "--format", "gait", "--out", str(tmp_path / "dance")]) == 0  # the suffix is added
    assert "dance.csv, " in capsys.readouterr().out
    assert tuple(rows(tmp_path / "dance.summary.csv")[0]) == SUMMARY_COLUMNS
    contacts = rows(tmp_path / "dance.contacts.csv")
    assert tuple(contacts[0]) == CONTACT_COLUMNS and {r["frame"] for r in contacts} <= {str(i) for i in range(12)}
    with pytest.raises(SystemExit):
        main(["process", clip, "--format", "nope"])

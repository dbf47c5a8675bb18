"""Wide CSV, JSON round trip, TRC, DeepLabCut CSV, the export CLI and bad input for every exporter."""

from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path

import numpy as np
import pytest

from test_bvh_synthetic import make_sequence

from posetracker.cli.export import add_export_parser
from posetracker.export import ExportError, exporters, get_exporter, read_sequence
from posetracker.skeletons import load_skeleton
from posetracker.types import PoseFrame, PoseSequence

FORMATS = ["csv", "wide-csv", "json", "bvh", "trc", "dlc", "angles", "gait"]
SUFFIX = {"csv": ".csv", "wide-csv": ".csv", "json": ".json", "bvh": ".bvh", "trc": ".trc", "dlc": ".csv", "angles": ".csv",
          "gait": ".csv"}


def _mouse_sequence(n: int = 6, animals: int = 2) -> PoseSequence:
    spec = load_skeleton("mouse4")
    rng = np.random.default_rng(0)
    frames = []
    for i in range(n):
        kp = rng.uniform(0, 500, (animals, spec.num_joints, 3)).astype(np.float32)
        kp[..., 2] = np.nan
        conf = rng.uniform(0.5, 1, (animals, spec.num_joints)).astype(np.float32)
        frames.append(PoseFrame(i, i / 30, kp, conf, np.ones(animals, np.float32), np.arange(animals, dtype=np.int64), (640, 480)))
    frames[2] = PoseFrame(2, 2 / 30, frames[2].keypoints[:1], frames[2].confidence[:1], np.ones(1, np.float32),
                          np.array([1], np.int64), (640, 480))  # animal 0 absent in frame 2
    return PoseSequence(frames, 30.0, spec, {"source": "synthetic mice"})


def test_registry_has_every_format():
    assert set(FORMATS) <= set(exporters())
    assert exporters()["csv"].suffixes == (".csv",)


def test_json_roundtrip_exact(tmp_path):
    seq = make_sequence(12, people=2)
    f0 = seq.frames[3]
    f0.world[1, 4] = np.nan  # a missing joint survives as nan
    out = tmp_path / "s.json"
    get_exporter("json").write(seq, out)
    back = read_sequence(out)
    assert back.fps == seq.fps and back.skeleton == seq.skeleton and back.metadata == seq.metadata
    for a, b in zip(seq.frames, back.frames):
        assert (a.index, a.timestamp, a.image_size) == (b.index, b.timestamp, tuple(b.image_size))
        np.testing.assert_array_equal(a.keypoints, b.keypoints)
        np.testing.assert_array_equal(a.confidence, b.confidence)
        np.testing.assert_array_equal(a.world, b.world)
        np.testing.assert_array_equal(a.track_ids, b.track_ids)


def test_wide_csv(tmp_path):
    seq = make_sequence(5, people=2)
    out = tmp_path / "w.csv"
    get_exporter("wide-csv").write(seq, out)
    rows = list(csv.reader(out.open()))
    head = rows[0]
    assert head[:5] == ["frame", "time_s", "person_id", "nose_x_px", "nose_y_px"]
    assert len(head) == 3 + 6 * 18 + 2 + 18 and "centre_conf" in head  # + stature_m, stature_source, J_bone_m
    assert len(rows) == 1 + 5 * 2
    r = dict(zip(head, rows[2]))
    assert r["person_id"] == "1" and float(r["left_wrist_x_m"]) == pytest.approx(seq.frames[0].world[1, 9, 0], abs=1e-4)
    get_exporter("wide-csv").write(seq, out, force=True, person=0)
    assert len(list(csv.reader(out.open()))) == 1 + 5


def test_trc_header_and_values(tmp_path):
    seq = make_sequence(8, fps=50.0, people=2)
    files = get_exporter("trc").write(seq, tmp_path / "m.trc")
    assert [f.name for f in files] == ["m_person0.trc", "m_person1.trc"]
    lines = files[0].read_text().split("\n")
    assert lines[0].split("\t") == ["PathFileType", "4", "(X/Y/Z)", "m_person0.trc"]
    assert lines[1].split("\t") == ["DataRate", "CameraRate", "NumFrames", "NumMarkers", "Units", "OrigDataRate",
                                    "OrigDataStartFrame", "OrigNumFrames"]
    vals = lines[2].split("\t")
    assert float(vals[0]) == pytest.approx(50.0) and vals[2:5] == ["8", "17", "mm"] and vals[6:] == ["1", "8"]
    names = lines[3].split("\t")
    assert names[:3] == ["Frame#", "Time", "nose"] and names[3:5] == ["", ""] and names[5] == "left_eye"
    assert "centre" not in names and len(names) == 2 + 3 * 17
    assert lines[4].split("\t")[:5] == ["", "", "X1", "Y1", "Z1"] and lines[4].split("\t")[-1] == "Z17"
    assert lines[5] == ""
    row = lines[6].split("\t")
    assert row[0] == "1" and float(row[1]) == 0.0 and len(row) == 2 + 3 * 17
    w = seq.frames[0].world[0, 0]  # nose, camera metres -> Y-up millimetres
    assert [float(v) for v in row[2:5]] == pytest.approx([w[0] * 1000, -w[1] * 1000, -w[2] * 1000], abs=1e-3)
    assert float(lines[7].split("\t")[1]) == pytest.approx(0.02)


def test_dlc_csv_single_and_multi_with_pandas(tmp_path):
    pd = pytest.importorskip("pandas")
    seq = _mouse_sequence()
    get_exporter("dlc").write(seq, tmp_path / "multi.csv")
    df = pd.read_csv(tmp_path / "multi.csv", header=[0, 1, 2, 3], index_col=0)
    assert df.columns.names == ["scorer", "individuals", "bodyparts", "coords"]
    assert list(df.columns.get_level_values("bodyparts").unique()) == ["snout", "leftear", "rightear", "tailbase"]
    assert list(df.columns.get_level_values("individuals").unique()) == ["track0", "track1"]
    assert df.shape == (6, 2 * 4 * 3) and list(df.index) == list(range(6))
    assert df.loc[1, ("PoseTracker", "track1", "leftear", "x")] == pytest.approx(seq.frames[1].keypoints[1, 1, 0], abs=1e-3)
    assert np.isnan(df.loc[2, ("PoseTracker", "track0", "snout", "likelihood")])  # absent animal: empty cells
    get_exporter("dlc").write(seq, tmp_path / "one.csv", person=1)
    df1 = pd.read_csv(tmp_path / "one.csv", header=[0, 1, 2], index_col=0)
    assert df1.columns.names == ["scorer", "bodyparts", "coords"] and df1.shape == (6, 12)
    assert list(df1.columns.get_level_values("coords")[:3]) == ["x", "y", "likelihood"]
    first = (tmp_path / "one.csv").read_text().splitlines()[:3]
    assert [ln.split(",")[0] for ln in first] == ["scorer", "bodyparts", "coords"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="posetracker")
    add_export_parser(p.add_subparsers(dest="command", required=True))
    return p


def test_cli_export(tmp_path, capsys, monkeypatch):
    seq = make_sequence(20)
    src = tmp_path / "s.json"
    get_exporter("json").write(seq, src)
    for fmt in FORMATS:
        out = tmp_path / f"o_{fmt}{SUFFIX[fmt]}"
        args = _parser().parse_args(["export", str(src), "--format", fmt, "--out", str(out)])
        assert args.func(args) == 0, fmt
        assert out.exists()
    args = _parser().parse_args(["export", str(src), "--format", "bvh", "--out", str(tmp_path / "o_bvh.bvh")])
    assert args.func(args) == 1 and "exists" in capsys.readouterr().err  # no --force
    args = _parser().parse_args(["export", str(src), "-f", "bvh", "-o", str(tmp_path / "o_bvh.bvh"), "--force",
                                 "--person", "0", "--rotation-order", "XYZ", "--units", "m"])
    assert args.func(args) == 0 and "Xrotation Yrotation Zrotation" in (tmp_path / "o_bvh.bvh").read_text()
    args = _parser().parse_args(["export", str(tmp_path / "missing.json"), "-f", "csv"])
    assert args.func(args) == 2
    monkeypatch.chdir(tmp_path)  # default output name: INPUT stem + suffix, here
    args = _parser().parse_args(["export", str(src), "-f", "trc"])
    assert args.func(args) == 0 and (tmp_path / "s.trc").exists()


# ---- bad input: clear errors, nothing left behind ----


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _with_people(seq: PoseSequence, fn) -> PoseSequence:
    return PoseSequence([fn(f) for f in seq.frames], seq.fps, seq.skeleton, seq.metadata)


@pytest.mark.parametrize("fmt", ["wide-csv", "bvh", "trc", "dlc", "angles", "gait"])
def test_empty_sequence(fmt, tmp_path):
    seq = PoseSequence([], 30.0, load_skeleton("human18"))
    with pytest.raises(ExportError, match="no frames"):
        get_exporter(fmt).write(seq, tmp_path / f"e{SUFFIX[fmt]}")
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_frame(fmt, tmp_path):
    seq = make_sequence(1)
    files = get_exporter(fmt).write(seq, tmp_path / f"one{SUFFIX[fmt]}")
    assert all(f.exists() for f in files)
    if fmt == "bvh":
        text = files[0].read_text()
        assert "Frames: 1\n" in text and "Frame Time: 0.0333333333" in text  # 1 / fps


@pytest.mark.parametrize("fmt", ["bvh", "trc"])
def test_person_with_every_joint_missing(fmt, tmp_path):
    def blank(f: PoseFrame) -> PoseFrame:
        w = f.world.copy()
        w[:] = np.nan
        return PoseFrame(f.index, f.timestamp, f.keypoints, f.confidence, f.scores, f.track_ids, f.image_size, w)

    seq = _with_people(make_sequence(10, people=2), blank)
    with pytest.raises(ExportError, match="person 0"):
        get_exporter(fmt).write(seq, tmp_path / f"x{SUFFIX[fmt]}")
    assert _leftovers(tmp_path) == []


def test_nans_in_some_frames(tmp_path):
    def holes(f: PoseFrame) -> PoseFrame:
        w, kp = f.world.copy(), f.keypoints.copy()
        if f.index % 3 == 0:
            w[0, [7, 9]] = np.nan
            kp[0, [7, 9]] = np.nan
        return PoseFrame(f.index, f.timestamp, kp, f.confidence, f.scores, f.track_ids, f.image_size, w)

    seq = _with_people(make_sequence(30), holes)
    for fmt in FORMATS:
        for f in get_exporter(fmt).write(seq, tmp_path / f"n_{fmt}{SUFFIX[fmt]}"):
            if fmt == "trc":  # OpenSim's missing-marker value, by design
                assert all(v in ("NaN",) or "nan" not in v.lower() for v in f.read_text().split())
            else:
                assert "nan" not in f.read_text().lower(), (fmt, f.name)


@pytest.mark.parametrize("fmt", FORMATS)
def test_existing_file_needs_force_and_unwritable_folder(fmt, tmp_path):
    seq = make_sequence(4)
    out = tmp_path / f"o{SUFFIX[fmt]}"
    out.write_text("keep me")
    with pytest.raises(ExportError, match="exists"):
        get_exporter(fmt).write(seq, out)
    assert out.read_text() == "keep me" and _leftovers(tmp_path) == [out.name]
    get_exporter(fmt).write(seq, out, force=True)
    assert out.read_text() != "keep me"
    with pytest.raises(ExportError, match="does not exist"):
        get_exporter(fmt).write(seq, tmp_path / "no" / "such" / f"o{SUFFIX[fmt]}")
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        with pytest.raises(ExportError, match="not writable"):
            get_exporter(fmt).write(seq, ro / f"o{SUFFIX[fmt]}")


def test_failure_midway_leaves_nothing(tmp_path, monkeypatch):
    """The second of two BVH files fails to write: neither it, its report, nor the first file stays."""
    import posetracker.export.bvh as bvh

    seq = make_sequence(10, people=2)
    real = bvh.bvh_text
    calls = {"n": 0}

    def flaky(motion, units="cm"):
        calls["n"] += 1
        if calls["n"] == 2:
            raise ExportError("disk full (simulated)")
        return real(motion, units)

    monkeypatch.setattr(bvh, "bvh_text", flaky)
    with pytest.raises(ExportError, match="simulated"):
        get_exporter("bvh").write(seq, tmp_path / "p.bvh")
    assert _leftovers(tmp_path) == []

    from posetracker.export import files

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(bvh, "bvh_text", real)
    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(ExportError, match="No space left"):
        get_exporter("bvh").write(seq, tmp_path / "p.bvh")
    assert _leftovers(tmp_path) == []


def test_cli_export_from_recording_folder(tmp_path):
    recording = pytest.importorskip("posetracker.recording")
    from posetracker.types import Frame

    seq = make_sequence(12)
    folder = tmp_path / "session"
    with recording.SessionRecorder(folder, 30.0, (64, 48), seq.skeleton) as rec:
        for f in seq.frames:
            rec.write(Frame(f.index, f.timestamp, np.zeros((48, 64, 3), np.uint8)), f)
    out = tmp_path / "session.bvh"
    args = _parser().parse_args(["export", str(folder), "-f", "bvh", "-o", str(out)])
    assert args.func(args) == 0 and "Frames: 12" in out.read_text()
    args = _parser().parse_args(["export", str(tmp_path), "-f", "bvh", "-o", str(tmp_path / "x.bvh")])
    assert args.func(args) == 2  # a folder that is not a recording: clear error, exit 2


def test_exported_files_follow_the_users_umask(tmp_path):
    """Exports are ordinary files: 0666 less the umask (0644 with the usual 022), not owner-only."""
    import os
    import stat

    from posetracker.export import get_exporter

    old = os.umask(0o022)
    try:
        out = get_exporter("csv").write(make_sequence(5), tmp_path / "poses.csv")
        assert stat.S_IMODE(os.stat(out[0]).st_mode) == 0o644
        os.umask(0o077)
        out = get_exporter("json").write(make_sequence(5), tmp_path / "poses.json")
        assert stat.S_IMODE(os.stat(out[0]).st_mode) == 0o600
    finally:
        os.umask(old)


def test_trc_writes_nan_for_missing_markers(tmp_path):
    """Every row has all its cells: a missing marker is NaN (OpenSim rejects rows that end early)."""
    seq = make_sequence(6, fps=30.0)
    for f in seq.frames[2:4]:
        f.world[0, 9] = np.nan  # left wrist unseen for two frames
    lines = get_exporter("trc").write(seq, tmp_path / "m.trc")[0].read_text().rstrip("\n").split("\n")
    rows = [line.split("\t") for line in lines[6:]]
    assert all(len(r) == 2 + 3 * 17 for r in rows)
    col = 2 + 3 * 9
    assert rows[2][col:col + 3] == ["NaN"] * 3 and rows[1][col] != "NaN"
    assert np.isnan(float(rows[3][col]))


def test_an_output_name_without_the_suffix_gets_it(tmp_path, capsys):
    from posetracker.cli import main
    from posetracker.export import with_suffix

    bvh = get_exporter("bvh")
    assert with_suffix(tmp_path / "walk", bvh) == tmp_path / "walk.bvh"
    assert with_suffix(tmp_path / "walk.BVH", bvh) == tmp_path / "walk.BVH"
    assert with_suffix(tmp_path / "walk.v2", bvh) == tmp_path / "walk.v2.bvh"
    src = tmp_path / "s.json"
    get_exporter("json").write(make_sequence(6), src)
    assert main(["export", str(src), "--format", "trc", "--out", str(tmp_path / "markers")]) == 0
    assert (tmp_path / "markers.trc").is_file() and not (tmp_path / "markers").exists()


def test_bvh_of_a_crowd_writes_everyone_it_can_and_names_the_others(tmp_path, capsys):
    """One person without the joints the rig needs must not stop the export of the others."""
    from posetracker.cli import main
    from posetracker.export import ExportWarning, write_reporting

    seq = make_sequence(12, people=2)
    for f in seq.frames:
        f.world[1, 11:13] = np.nan  # person 1: hips never seen in 3-D
        f.keypoints[1, 11:13] = np.nan
    with pytest.warns(ExportWarning, match="person 1"):
        files = get_exporter("bvh").write(seq, tmp_path / "a.bvh")
    assert [f.name for f in files] == ["a_person0.bvh", "a_person0.bvh.json"]
    files, warned = write_reporting(get_exporter("bvh"), seq, tmp_path / "b.bvh")
    assert len(files) == 2 and len(warned) == 1 and "person 1" in warned[0]
    src = tmp_path / "s.json"
    get_exporter("json").write(seq, src)
    assert main(["export", str(src), "--format", "bvh", "--out", str(tmp_path / "c.bvh")]) == 0
    assert "warning: BVH: person 1 not exported" in capsys.readouterr().err
    with pytest.raises(ExportError, match="person 1"):  # nobody exportable: an error, nothing written
        get_exporter("bvh").write(seq, tmp_path / "d.bvh", person=1)
    assert not list(tmp_path.glob("d*"))

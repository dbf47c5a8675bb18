"""Each person's stature, its source and bone lengths in the CSV and TRC files as well as the JSON (issue #48):
columns appended to the pose CSVs, key=value fields on the TRC's first line."""

from __future__ import annotations

import csv
import dataclasses

import numpy as np
import pytest

from posetracker.export import get_exporter
from posetracker.motion.heights import Heights, apply_heights
from test_bvh_synthetic import make_sequence


@pytest.fixture(scope="module")
def people():
    """Two synthetic people, person 0 given 1.72 m, person 1 estimated."""
    seq, warnings = apply_heights(make_sequence(20, people=2, seed=4), Heights(per_track={0: 1.72}))
    assert not warnings
    return seq


def test_tidy_csv_has_each_persons_stature_and_bones(people, tmp_path):
    pd = pytest.importorskip("pandas")
    path = get_exporter("csv").write(people, tmp_path / "p.csv")[0]
    rows = list(csv.DictReader(path.open()))
    meta = people.metadata["people"]
    knee0 = next(r for r in rows if r["person_id"] == "0" and r["joint"] == "left_knee")
    assert (knee0["stature_m"], knee0["stature_source"]) == ("1.720", "given")
    assert float(knee0["bone_m"]) == pytest.approx(meta["0"]["bones_m"]["left_hip-left_knee"], abs=1e-4)
    one = [r for r in rows if r["person_id"] == "1"]
    assert {r["stature_source"] for r in one} == {"estimated"}
    assert {r["stature_m"] for r in one} == {f"{meta['1']['stature_m']:.3f}"}
    assert all(r["bone_m"] == "" for r in rows if r["joint"] in ("nose", "centre", "left_hip"))  # from the centre
    df = pd.read_csv(path)  # no options: a plain table
    assert df["stature_m"].dtype.kind == "f" and len(df) == len(rows)
    by_joint = df[(df.person_id == 1) & (df.joint == "right_ankle")]["bone_m"]
    assert by_joint.iloc[0] == pytest.approx(meta["1"]["bones_m"]["right_knee-right_ankle"], abs=1e-4)


def test_wide_csv_has_them_after_the_joint_columns(people, tmp_path):
    pd = pytest.importorskip("pandas")
    path = get_exporter("wide-csv").write(people, tmp_path / "w.csv")[0]
    df = pd.read_csv(path)
    cols = list(df.columns)
    assert cols.index("stature_m") > cols.index("centre_conf")
    first = df[df.person_id == 0].iloc[0]
    assert first["stature_m"] == pytest.approx(1.72) and first["stature_source"] == "given"
    assert first["left_elbow_bone_m"] == pytest.approx(
        people.metadata["people"]["0"]["bones_m"]["left_shoulder-left_elbow"], abs=1e-4)
    assert np.isnan(first["nose_bone_m"])


def test_trc_first_line_carries_them_and_the_rest_is_unchanged(people, tmp_path):
    files = get_exporter("trc").write(people, tmp_path / "t.trc")
    lines = files[0].read_text().splitlines()
    fields = lines[0].split("\t")
    assert fields[:4] == ["PathFileType", "4", "(X/Y/Z)", "t_person0.trc"]
    kv = dict(f.split("=", 1) for f in fields[4:])
    assert kv["person"] == "0" and kv["stature_m"] == "1.720" and kv["stature_source"] == "given"
    bones = dict(b.split(":") for b in kv["bones_m"].split(","))
    assert float(bones["left_knee-left_ankle"]) == pytest.approx(
        people.metadata["people"]["0"]["bones_m"]["left_knee-left_ankle"], abs=1e-4)
    assert len(lines[1].split("\t")) == len(lines[2].split("\t")) == 8  # OpenSim reads exactly its 8 keys there
    bare = dataclasses.replace(people, metadata={k: v for k, v in people.metadata.items() if k != "people"})
    plain = get_exporter("trc").write(bare, tmp_path / "bare.trc")[0].read_text().splitlines()[0]
    assert plain.split("\t") == ["PathFileType", "4", "(X/Y/Z)", "bare_person0.trc"]


def test_several_views_measure_the_stature():
    seq = make_sequence(10, seed=2)
    seq = dataclasses.replace(seq, metadata={**seq.metadata, "multiview": {"cameras": ["a", "b"]}})
    done, _ = apply_heights(seq)
    assert done.metadata["people"]["0"]["stature_source"] == "multi-view"

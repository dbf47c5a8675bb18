import numpy as np
import pytest

from posetracker.skeletons import SkeletonError, available_skeletons, load_skeleton, spec_from_dict

COCO17 = ["nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder",
          "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip",
          "left_knee", "right_knee", "left_ankle", "right_ankle"]


def test_shipped_skeletons_load():
    assert {"human18", "mouse4", "fly13"} <= set(available_skeletons())
    for name in available_skeletons():
        spec = load_skeleton(name)
        assert spec.num_edges == spec.num_joints - 1
        assert spec.topo_order[0] == spec.root


def test_human18_matches_architecture():
    s = load_skeleton("human18")
    assert list(s.joint_names[:17]) == COCO17 and s.joint_names[17] == "centre"
    assert s.root == 17
    first = {s.joint_names[j] for j in s.first_keypoints}
    assert first == {"nose", "left_shoulder", "right_shoulder", "left_hip", "right_hip"}
    parent = {s.joint_names[c]: s.joint_names[p] for p, c in s.edges}
    assert parent["left_ear"] == "left_eye" and parent["left_eye"] == "nose"
    assert parent["right_wrist"] == "right_elbow" and parent["right_elbow"] == "right_shoulder"
    assert parent["left_ankle"] == "left_knee" and parent["left_knee"] == "left_hip"
    # Every edge's parent is located before its child in the edge order.
    seen = {s.root}
    for p, c in s.edges:
        assert p in seen
        seen.add(c)
    assert s.mirror_index[s.index("left_wrist")] == s.index("right_wrist")
    assert s.edge_of_child[s.root] == -1
    assert all(s.edges[s.edge_of_child[c], 1] == c for c in range(18) if c != s.root)


def test_animal_skeletons():
    mouse = load_skeleton("mouse4")
    assert mouse.labelled_joints == (0, 1, 2, 3) and mouse.virtual == {4: "bbox_centre"}
    fly = load_skeleton("fly13")
    assert fly.joint_names[fly.root] == "thorax" and fly.num_joints == 13
    assert set(fly.second_keypoints) == {fly.index("eyeL"), fly.index("eyeR")}


def _spec(joints):
    return spec_from_dict({"name": "t", "joints": joints})


@pytest.mark.parametrize("joints, message", [
    ([{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}], "no root"),
    ([{"name": "a", "parent": None}, {"name": "b", "parent": None}], "several roots"),
    ([{"name": "a", "parent": None}, {"name": "b", "parent": "c"}, {"name": "c", "parent": "b"}], "cycle"),
    ([{"name": "a", "parent": None}, {"name": "b", "parent": "zz"}], "unknown parent 'zz'"),
    ([{"name": "a", "parent": None}, {"name": "a", "parent": "a"}], "duplicate joint name 'a'"),
    ([{"name": "a", "parent": None}, {"name": "b", "parent": "a", "mirror": "q"}], "unknown mirror 'q'"),
    ([{"name": "a", "parent": None}, {"name": "b", "parent": "a", "mirror": "c"},
      {"name": "c", "parent": "a"}], "does not mirror it back"),
])
def test_bad_skeletons_are_rejected(joints, message):
    with pytest.raises(SkeletonError, match=message):
        _spec(joints)


def test_unknown_skeleton_lists_choices():
    with pytest.raises(SkeletonError, match="available: .*human18"):
        load_skeleton("octopus")


def test_index_error_names_joint():
    with pytest.raises(KeyError, match="no joint 'tail'"):
        load_skeleton("human18").index("tail")


def test_sigmas():
    s = load_skeleton("human18")
    assert s.sigmas.shape == (18,) and np.isnan(s.sigmas[17]) and s.sigmas[0] == pytest.approx(0.026)


def test_decoder_window_options(tmp_path):
    from posetracker.model.network import PoseNet
    from posetracker.session import NetworkSettings, SessionConfig, TrackingSession

    assert load_skeleton("human18").decoder == {}
    assert load_skeleton("mouse4").decoder == {"window_frac": 1.0, "min_window": 4.0, "min_person_score": 0.1,
                                              "min_centre_distance": 4.0}
    session = TrackingSession(PoseNet(load_skeleton("mouse4")), SessionConfig(network=NetworkSettings(runtime="torch")))
    assert (session.decoder.window_frac, session.decoder.min_window, session.decoder.min_person_score,
            session.decoder.min_centre_distance) == (1.0, 4.0, 0.1, 4.0)
    base = (load_skeleton.__globals__["SKELETON_DIR"] / "mouse4.yaml").read_text()
    for bad in ("decoder: {window: 2}", "decoder: {min_window: -1}", "decoder: 3"):
        p = tmp_path / "m.yaml"
        p.write_text(base.rsplit("decoder:", 1)[0] + bad + "\n")
        with pytest.raises(SkeletonError, match="decoder"):
            load_skeleton(p)

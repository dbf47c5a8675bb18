"""The shipped mouse4 animal mode: its files load together, and it still scores on held-out frames."""

from __future__ import annotations

import pytest

from conftest import REPO, shared_path


def test_shipped_animal_and_refiner_files_load():
    from posetracker.model.weights import load_posenet
    from posetracker.refiners import available_refiners, load_chain
    from posetracker.skeletons import load_skeleton

    mouse = load_skeleton("mouse4")
    net = load_posenet(REPO / "models" / "posenet-mouse4.safetensors", mouse)
    assert net.meta["trained"] == "heads" and net.spec.name == "mouse4"
    assert available_refiners("mouse4") == ["graph", "heatmap"]
    assert available_refiners("human18") == ["crop", "crop-fast", "graph"]
    assert load_chain(["graph", "heatmap"], mouse).names == ["heatmap", "graph"]


def test_mouse_held_out_scores():
    """models/refiners-and-animals.md: PCK@0.1 0.783 plain, 0.935 with the heatmap refiner (23 frames)."""
    from posetracker.evaluation.held_out import evaluate_items
    from posetracker.model.weights import load_posenet
    from posetracker.session import RefineSettings, SessionConfig, TrackingSession
    from posetracker.skeletons import load_skeleton
    from posetracker.train.detector_samples import load_split

    data = shared_path("data", "animal", "dlc_openfield_mouse", "normalized.json")
    mouse = load_skeleton("mouse4")
    _, held_out, cols = load_split(str(data), mouse, 0.2)
    net = load_posenet(REPO / "models" / "posenet-mouse4.safetensors", mouse)
    scores = {}
    for kinds in ((), ("heatmap",)):
        session = TrackingSession(net, SessionConfig(refine=RefineSettings(refiners=kinds)))
        scores[kinds] = evaluate_items(session.process_image, held_out, cols, mouse)
    assert len(held_out) == 23 and scores[()]["found"] == 23
    assert scores[()]["pck@0.1"] == pytest.approx(0.783, abs=0.03)
    assert scores[("heatmap",)]["pck@0.1"] == pytest.approx(0.935, abs=0.03)
    assert scores[()]["oriented"] == 23 and 0 <= scores[()]["reversed"] <= 2  # snout / tailbase (mouse4.yaml)


def test_mouse4_runs_its_refiners_by_default_and_the_human_model_its_precision_stage(monkeypatch):
    """Methods B and C on by default where they help (issue #49): mouse4's YAML names its heatmap and graph
    refiners (held-out PCK@0.1 0.783 -> 0.935); the human model keeps the product's default; a session built
    without naming refiners loads them; --refiners alone still turns them off."""
    from posetracker import cpu_threads
    from posetracker.refiners.base import default_refiners
    from posetracker.session import RefineSettings, SessionConfig, TrackingSession
    from posetracker.skeletons import load_skeleton

    assert load_skeleton("mouse4").refiners == {"offline": ("heatmap", "graph"), "live": ("heatmap", "graph")}
    assert default_refiners("mouse4", "offline") == ("heatmap", "graph")
    assert default_refiners("human18", "offline") == ("crop",)
    monkeypatch.setattr(cpu_threads, "usable_cpus", lambda: 1)
    assert default_refiners("mouse4", "live") == ()  # one CPU: the network alone
    session = TrackingSession.open("mouse4", config=SessionConfig(mode="offline"))
    assert sorted(session.refiners.names) == ["graph", "heatmap"]
    assert TrackingSession.open("mouse4", config=SessionConfig(mode="offline",
                                                               refine=RefineSettings(refiners=()))).refiners.names == []


def test_process_finishes_a_real_mouse_clip(tmp_path):
    """``posetracker process --skeleton mouse4`` end to end on frames of the open-field video: the finishing
    step (bones, camera, heights' report, encounters) runs on an animal skeleton (a human-only step once stopped
    every animal mode here)."""
    import json

    import av
    from conftest import shared_path

    from posetracker.cli import main

    video = shared_path("data", "animal", "dlc_openfield_mouse", "videos", "m3v1mp4.mp4")
    clip = tmp_path / "mouse.mp4"
    with av.open(str(video)) as src, av.open(str(clip), "w") as out:
        st = None
        for _, frame in zip(range(15), src.decode(video=0)):
            image = frame.to_ndarray(format="rgb24")
            if st is None:
                st = out.add_stream("mpeg4", rate=30)
                st.height, st.width = image.shape[:2]
                st.pix_fmt = "yuv420p"
            out.mux(st.encode(av.VideoFrame.from_ndarray(image, format="rgb24")))
        out.mux(st.encode())
    target = tmp_path / "mouse.json"
    assert main(["process", str(clip), "--skeleton", "mouse4", "--max-people", "1", "--out", str(target)]) == 0
    doc = json.loads(target.read_text())
    assert sum(len(f["people"]) for f in doc["frames"]) >= 10 and "camera" in doc["metadata"]

"""posetracker.train.user_mode: a user's labelled project -> a trained, scored, installed animal mode that a
TrackingSession opens; progress, cancel, the modes folder, and ``train detector`` on the shared code.
A tiny generated DeepLabCut project (3 labelled frames: 2 train, 1 held out), a few training steps."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest
import yaml

from test_importers import make_dlc  # a single-animal DeepLabCut project: 3 labelled frames, one unlabelled
from test_importers import make_slp  # a SLEAP project: a video and an image list, 2 user-labelled frames

from posetracker.cli import main
from posetracker.importers import import_project
from posetracker.refiners import available_refiners
from posetracker.session import RefineSettings, SessionConfig, TrackingSession
from posetracker.skeletons import load_skeleton
from posetracker.train.detector_run import helping_refiners
from posetracker.train.user_mode import (
    TrainingCancelled, TrainingError, create_user_mode, format_report, install_user_mode, mode_name, train_user_mode,
    user_mode_for, user_modes, user_modes_dir,
)

def small(train_yaml: Path) -> None:
    """Few samples, small batches: a test-sized run."""
    cfg = yaml.safe_load(train_yaml.read_text())
    cfg.update(batch=2, warmup_steps=1)
    cfg["augment"] = {**cfg["augment"], "variants": 1}
    train_yaml.write_text(yaml.safe_dump(cfg, sort_keys=False))


@pytest.fixture
def modes(tmp_path, monkeypatch):
    monkeypatch.setenv("POSETRACKER_MODES", str(tmp_path / "modes"))
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "modes"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "projects").mkdir()
    return make_dlc(tmp_path / "projects")


def test_modes_folder_default_and_env(monkeypatch, tmp_path):
    monkeypatch.delenv("POSETRACKER_MODES", raising=False)
    assert user_modes_dir() == Path.home() / ".local" / "share" / "posetracker" / "modes"
    monkeypatch.setenv("POSETRACKER_MODES", str(tmp_path / "m"))
    assert user_modes_dir() == tmp_path / "m" and user_modes() == []  # a missing folder lists nothing


def test_train_install_list_and_open(modes, project):
    seen = []
    result = create_user_mode(project, "My mouse", steps=3, progress=lambda d, t, m: seen.append((d, t, m)),
                              config=small)
    assert result.name == "My_mouse" and len(result.history) == 3
    folder = modes / "My_mouse"
    assert sorted(p.name for p in folder.iterdir()) == [
        "My_mouse.yaml", "posenet-My_mouse.safetensors", "refiner-graph-My_mouse.safetensors",
        "refiner-heatmap-My_mouse.safetensors", "report.json", "training"]
    assert not list(folder.rglob("*.partial")) and not list(folder.rglob("*.tmp"))
    assert result.weights == folder / "posenet-My_mouse.safetensors" and result.refiner.is_file()

    # progress: the stages in order, training once per step
    messages = [m for _, _, m in seen]
    assert messages[0].startswith("Importing")
    assert any(m.startswith("Reading labelled frames: 2 / 2") for m in messages)
    steps = [(d, t) for d, t, m in seen if m.startswith("Training:")]
    assert steps == [(1, 3), (2, 3), (3, 3)]
    heatmap = [(d, t) for d, t, m in seen if m.startswith("Training the heatmap refiner")]
    assert heatmap == [(1, 2), (2, 2)]  # the config's 800 of 1,500 steps, in proportion to the 3 asked
    assert any("Scoring the held-out frames (no refiner)" in m for m in messages)
    assert any("Scoring the held-out frames (graph refiner)" in m for m in messages)
    assert any("Scoring the held-out frames (heatmap+graph refiner)" in m for m in messages)
    assert messages[-1].startswith("Installing")

    # the report: held-out scores for no refiner and the graph refiner, saved beside the mode
    report = json.loads((folder / "report.json").read_text())
    assert report == result.report and report["steps"] == 3 and report["held_out_items"] == 1
    assert report["train_items"] == 2 and report["project"] == str(project.resolve())
    assert set(report["held_out"]) == {"none", "graph", "heatmap", "heatmap+graph"}
    assert report["heatmap_refiner_steps"] == 2 and tuple(report["default_refiners"]) == helping_refiners(
        report["held_out"])
    for r in report["held_out"].values():
        assert {"pck@0.1", "pck@0.2", "mean_px", "median_px", "found", "instances"} <= set(r)
        assert r["instances"] == 1 and 0.0 <= r["pck@0.1"] <= r["pck@0.2"] <= 1.0
    text = format_report(report)
    assert "PCK@0.1" in text and "graph" in text and "Held-out frames: 1" in text

    # listed, found from its skeleton path, opened by a session with its refiner, run on one image
    (mode,) = user_modes()
    assert (mode.name, mode.skeleton, mode.weights) == ("My_mouse", folder / "My_mouse.yaml", result.weights)
    assert mode.report["steps"] == 3 and user_mode_for(str(mode.skeleton)) == mode
    assert user_mode_for("mouse4") is None
    spec = load_skeleton(mode.skeleton)
    assert spec.name == "My_mouse" and available_refiners(spec.name, mode.folder) == ["graph", "heatmap"]
    assert spec.refiners == {"offline": tuple(report["default_refiners"]), "live": tuple(report["default_refiners"])}
    default = TrackingSession.open(str(mode.skeleton), mode.weights, SessionConfig(mode="offline"))
    assert default.refiners.names == list(report["default_refiners"])  # none chosen: what beat none
    session = TrackingSession.open(str(mode.skeleton), mode.weights, SessionConfig(refine=RefineSettings(refiners=("graph",))))
    assert session.refiners.names == ["graph"]
    frame = session.process_image(cv2.imread(str(project / "labeled-data/m1/img000.png"))[:, :, ::-1].copy())
    assert frame.keypoints.shape[1:] == (spec.num_joints, 3)

    # the app lists it after the shipped skeletons, lists its refiner and opens it from its folder
    from ui.services import ModelChoice, model_options, real_session, refiner_names

    options = model_options()
    assert options[-1].user and (options[-1].skeleton, options[-1].label) == (
        str(mode.skeleton), "Animal (My_mouse, user-trained)")
    assert not any(o.user for o in options[:-1])
    names, note = refiner_names(str(mode.skeleton))
    assert names == ["graph", "heatmap"] and (note is None) == (not report["default_refiners"])
    from posetracker.train.user_mode import set_default_refiners
    from ui.services import mode_refiners

    assert mode_refiners(str(mode.skeleton), "offline") == tuple(report["default_refiners"])
    set_default_refiners(mode.skeleton, ())  # the defaults fixed (this tiny run's scores are a draw)
    for kind in ("live", "offline"):
        app_session = real_session(ModelChoice(str(mode.skeleton), kind, refiners=("graph",)))
        assert app_session.spec.name == "My_mouse" and app_session.refiners.names == ["graph"]
    set_default_refiners(mode.skeleton, ("heatmap",))  # what the app ticks when the mode is chosen: its own folder's
    assert mode_refiners(str(mode.skeleton), "offline") == ("heatmap",) and mode_refiners("nope", "live") == ()
    assert refiner_names(str(mode.skeleton))[1] == "Process whole file always runs: Heatmap refiner."
    offline = real_session(ModelChoice(str(mode.skeleton), "offline", refiners=("graph",)))
    assert offline.refiners.names == ["heatmap", "graph"]  # whole-file processing adds the mode's offline defaults

    # the name is now taken; shipped names and empty ones never were free
    with pytest.raises(TrainingError, match="already exists"):
        mode_name("My mouse")
    with pytest.raises(TrainingError, match="shipped"):
        mode_name("mouse4")
    with pytest.raises(TrainingError, match="name"):
        mode_name("  ")


def test_a_sleap_project_trains_into_a_mode_that_reads_an_image(modes, tmp_path):
    """The same end to end from a SLEAP ``.slp`` (two user-labelled frames: one trains, one is held out)."""
    (tmp_path / "sleap").mkdir()
    slp = make_slp(tmp_path / "sleap")
    result = create_user_mode(slp, "Two flies", steps=2, config=small)
    assert result.name == "Two_flies" and len(result.history) == 2 and result.weights.is_file()
    assert result.report["train_items"] == 1 and result.report["held_out_items"] == 1
    (mode,) = user_modes()
    spec = load_skeleton(mode.skeleton)
    assert {"head", "thorax", "abdomen", "wingL", "wingR"} <= set(spec.joint_names)
    session = TrackingSession.open(str(mode.skeleton), mode.weights, SessionConfig(refine=RefineSettings(refiners=())))
    frame = session.process_image(cv2.imread(str(tmp_path / "sleap" / "imgs" / "f1.png"))[:, :, ::-1].copy())
    assert frame.keypoints.shape[1:] == (spec.num_joints, 3)


def test_cancel_leaves_no_weights(modes, project, tmp_path):
    # train_user_mode on an import: cancelled after the second step, nothing written
    out = tmp_path / "import"
    import_project(project, out, name="m")
    small(out / "train.yaml")
    steps = []

    def cancel() -> bool:
        return len(steps) >= 2

    with pytest.raises(TrainingCancelled):
        train_user_mode(out / "train.yaml", steps=5, cancel=cancel,
                        progress=lambda d, t, m: steps.append(d) if m.startswith("Training") else None)
    assert steps == [1, 2]
    assert not list(out.glob("*.safetensors*")) and not (out / "report.json").exists()
    # cancelled while the heatmap refiner trains: the detector and graph refiner already written are removed
    seen = []
    with pytest.raises(TrainingCancelled):
        train_user_mode(out / "train.yaml", steps=3, cancel=lambda: any("heatmap" in m for m in seen),
                        progress=lambda d, t, m: seen.append(m))
    assert any(m.startswith("Training the heatmap refiner") for m in seen)
    assert not list(out.glob("*.safetensors*")) and not (out / "report.json").exists()
    with pytest.raises(TrainingError, match="missing"):
        install_user_mode(out, "m")

    # the app's path, cancelled before training: no mode, no folder left
    with pytest.raises(TrainingCancelled):
        create_user_mode(project, "later", steps=3, cancel=lambda: True, config=small)
    assert user_modes() == [] and not (modes / "later").exists()

    # a project that cannot be read: a message, no folder
    with pytest.raises(TrainingError, match="no config.yaml"):
        create_user_mode(tmp_path, "broken", steps=3)
    assert not (modes / "broken").exists()


def test_cli_train_detector_on_the_shared_code(modes, project, tmp_path, capsys):
    out = tmp_path / "cli"
    import_project(project, out, name="m")
    small(out / "train.yaml")
    assert main(["train", "detector", "--config", str(out / "train.yaml"), "--steps", "2"]) == 0
    err = capsys.readouterr().err
    assert "2 training items x 1 variants = 2 samples" in err and "wrote" in err
    assert (out / "posenet-m.safetensors").is_file() and (out / "refiner-graph-m.safetensors").is_file()
    assert len(json.loads((out / "posenet-m.losses.json").read_text())) == 2
    # method B on the frozen detector, by the same code as the app's modes
    assert main(["train", "refiner", "--kind", "heatmap", "--config", str(out / "train.yaml"), "--steps", "2",
                 "--log", str(out / "heatmap.json")]) == 0
    assert (out / "refiner-heatmap-m.safetensors").is_file() and len(json.loads((out / "heatmap.json").read_text())) == 2
    (out / "refiner-heatmap-m.safetensors").unlink()
    mode = install_user_mode(out, "m")  # a command-line import installs as a mode too (copied)
    assert (out / "posenet-m.safetensors").is_file() and [m.name for m in user_modes()] == ["m"]
    assert mode.report == {} and available_refiners("m", mode.folder) == ["graph"]
    assert load_skeleton(mode.skeleton).refiners == {}  # not scored: the product's defaults (none for "m")



def _score(pck: float, mean: float, found: int = 10) -> dict:
    return {"pck@0.1": pck, "mean_px": mean, "found": found, "instances": 10}


def test_the_default_refiners_are_what_beat_none_on_the_held_out_frames():
    none = _score(0.50, 6.0)
    assert helping_refiners({"none": none, "graph": _score(0.55, 5.0), "heatmap": _score(0.60, 4.0),
                             "heatmap+graph": _score(0.62, 4.5)}) == ("heatmap",)  # the lowest mean error
    assert helping_refiners({"none": none, "heatmap+graph": _score(0.52, 5.5)}) == ("heatmap", "graph")
    # lower mean error but a lower PCK, fewer animals found, or nothing found: not better
    assert helping_refiners({"none": none, "graph": _score(0.45, 5.0), "heatmap": _score(0.60, 4.0, found=9),
                             "heatmap+graph": {"pck@0.1": 0.7, "mean_px": None, "found": 10}}) == ()
    assert helping_refiners({}) == () and helping_refiners({"none": none}) == ()


def test_default_refiners_written_to_a_skeleton_are_what_its_sessions_run(tmp_path, monkeypatch):
    """A user mode's default refiners (its skeleton YAML's ``refiners:``) are what a session of it runs when
    none are chosen, in the mode's own folder; written again, the line is replaced, comments kept."""
    from posetracker.refiners import build_refiner, default_refiners, refiner_path, save_refiner
    from posetracker.train.user_mode import set_default_refiners

    monkeypatch.setattr("posetracker.cpu_threads.usable_cpus", lambda: 2)
    text = (Path(__file__).parents[2] / "posetracker/skeletons/mouse4.yaml").read_text().replace(
        "name: mouse4", "name: mine").replace("refiners:", "# refiners:")
    yaml_path = tmp_path / "mine.yaml"
    yaml_path.write_text(text)
    spec = load_skeleton(yaml_path)
    for kind in ("graph", "heatmap"):
        save_refiner(build_refiner(kind, spec), refiner_path(kind, "mine", tmp_path), {})
    assert default_refiners(spec, "offline", tmp_path) == ()  # no refiners: line: the product's (crop: none here)
    set_default_refiners(yaml_path, ("heatmap", "graph"))
    set_default_refiners(yaml_path, ("graph",))
    spec = load_skeleton(yaml_path)
    assert yaml_path.read_text().count("refiners:") == 2 and yaml_path.read_text().startswith("# mouse4")
    assert spec.refiners == {"offline": ("graph",), "live": ("graph",)}
    for mode in ("offline", "live"):
        assert default_refiners(spec, mode, tmp_path) == ("graph",)
    assert default_refiners(spec, "offline") == ()  # not in the shipped models folder

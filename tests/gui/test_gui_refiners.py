"""The model panel's Refiners group (listed per skeleton, toggled into the session, persisted) and its
most-people setting (offscreen)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from gui_helpers import fake_services, isolated_settings, make_video, no_modal_dialogs  # noqa: F401
from posetracker.refiners import RefinerError
from posetracker.defaults import DEFAULT_MAX_PEOPLE
from ui.services import ModelChoice

pytestmark = [pytest.mark.gui, pytest.mark.qt_log_level_fail("WARNING"),
              pytest.mark.qt_log_ignore("propagateSizeHints")]

BOTH = {"human18": ["graph", "heatmap"], "mouse4": ["graph"]}


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("clip") / "clip.mp4", frames=45)


def lister(table: dict[str, list[str]]):
    """A fake ``Services.refiner_names``: the kinds in ``table``, the real note when there are none."""

    def names(skeleton: str):
        kinds = list(table.get(skeleton, []))
        return kinds, None if kinds else f"No refiners are trained for {skeleton}."

    return names


def make_window(qtbot, table=None, **kwargs):
    """A window whose every skeleton has weights, refiners listed from ``table`` (None: the real lister),
    and sessions that carry the refiner chain's names like TrackingSession does."""
    from ui.main_window import MainWindow

    services = fake_services(**kwargs)
    services.weights_path = lambda skeleton: Path(__file__)  # exists: every skeleton is selectable
    if table is not None:
        services.refiner_names = lister(table)
    plain = services.make_session

    def make_session(choice):
        session = plain(choice)
        session.refiners = SimpleNamespace(names=list(choice.refiners))
        return session

    services.make_session = make_session
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.show()
    return window


def poses_after(qtbot, window, n=3, timeout=5.0):
    start = window.poses_received
    qtbot.waitUntil(lambda: window.poses_received >= start + n, timeout=int(timeout * 1000))


def kinds(window) -> list[str]:
    return [box.property("kind") for box in window.model_panel.refiner_boxes]


def choose_skeleton(window, name: str) -> None:
    """As the user does: pick the skeleton in the combo box."""
    combo = window.model_panel.skeleton
    index = combo.findData(name)
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


def test_toggling_a_refiner_rebuilds_the_session_with_it(qtbot, clip):
    window = make_window(qtbot, BOTH)
    panel, choices = window.model_panel, window.services.choices
    assert panel.refiners.isEnabled() and kinds(window) == ["graph", "heatmap"]
    assert [b.text() for b in panel.refiner_boxes] == ["Graph refiner (method C)", "Heatmap refiner (method B)"]
    window.open_source(str(clip))
    poses_after(qtbot, window)
    assert choices[-1].refiners == () and "refiners" not in panel.model_label.text()
    asked = len(choices)
    with qtbot.waitSignal(panel.refiners_changed, timeout=1000) as blocker:
        panel.refiner_boxes[0].click()
    assert blocker.args == [("graph",)]
    qtbot.waitUntil(lambda: len(choices) > asked, timeout=3000)
    poses_after(qtbot, window)
    assert choices[-1].refiners == ("graph",) and choices[-1].mode == "live" and choices[-1].lookahead == 1
    assert window.state.refiners == ("graph",)
    qtbot.waitUntil(lambda: "refiners: graph" in panel.model_label.text(), timeout=3000)
    with qtbot.waitSignal(window.controller.processing_done, timeout=8000):
        window.set_mode("offline")
    assert choices[-1].mode == "offline" and choices[-1].refiners == ("graph",)
    window.close()


def test_the_choice_persists_between_runs(qtbot):
    window = make_window(qtbot, BOTH)
    window.model_panel.refiner_boxes[1].click()
    assert window.state.refiners == ("heatmap",)
    window.close()
    again = make_window(qtbot, BOTH)
    assert again.state.refiners == ("heatmap",)
    assert [b.isChecked() for b in again.model_panel.refiner_boxes] == [False, True]
    assert again.live_factory().args[0].refiners == ("heatmap",)
    again.close()


def test_switching_skeleton_lists_its_refiners_and_drops_the_missing_ones(qtbot):
    window = make_window(qtbot, BOTH)
    panel = window.model_panel
    for box in panel.refiner_boxes:
        box.click()
    assert window.state.refiners == ("graph", "heatmap")
    choose_skeleton(window, "mouse4")
    assert window.state.skeleton == "mouse4" and kinds(window) == ["graph"]
    assert panel.refiner_boxes[0].isChecked() and panel.refiners.isEnabled()
    assert window.state.refiners == ("graph",)
    assert window.live_factory().args[0] == ModelChoice("mouse4", "live", 1, refiners=("graph",))
    choose_skeleton(window, "fly13")
    assert kinds(window) == [] and not panel.refiners.isEnabled()
    assert panel.refiner_note.text() == "No refiners are trained for fly13."
    assert window.state.refiners == ()
    choose_skeleton(window, "human18")
    assert kinds(window) == ["graph", "heatmap"] and panel.checked_refiners() == ()
    window.close()


def test_no_trained_refiners_disable_the_group_with_a_note(qtbot, monkeypatch):
    import posetracker.refiners

    monkeypatch.setattr(posetracker.refiners, "available_refiners", lambda skeleton, *a, **k: [])
    window = make_window(qtbot)  # the real lister
    panel = window.model_panel
    assert not panel.refiners.isEnabled() and panel.refiner_boxes == []
    assert panel.refiner_note.text() == "No refiners are trained for human18."
    assert not panel.refiner_note.isHidden()
    window.close()


def test_refiner_names_reports_broken_plugins_and_never_raises(monkeypatch):
    import posetracker.refiners
    from ui.services import refiner_names

    monkeypatch.setattr(posetracker.refiners, "available_refiners", lambda skeleton, *a, **k: ["graph"])
    monkeypatch.setattr(posetracker.refiners, "plugin_errors", lambda: {"fancy": "ImportError: no module named fancy"})
    names, note = refiner_names("human18")
    assert names == ["graph"] and note == "Broken refiner plug-ins: fancy: ImportError: no module named fancy"

    def broken(skeleton, *a, **k):
        raise RuntimeError("entry points are unreadable")

    monkeypatch.setattr(posetracker.refiners, "available_refiners", broken)
    assert refiner_names("mouse4") == ([], "Refiners could not be loaded: entry points are unreadable")


def test_a_refiner_that_fails_to_load_is_reported_and_unticking_recovers(qtbot, clip):
    window = make_window(qtbot, BOTH)
    services = window.services
    working = services.make_session

    def make_session(choice):
        if choice.refiners:
            raise RefinerError("refiner weights not found: models/refiner-graph-human18.safetensors")
        return working(choice)

    services.make_session = make_session
    window.open_source(str(clip))
    poses_after(qtbot, window)
    window.model_panel.refiner_boxes[0].click()
    qtbot.waitUntil(lambda: any("Could not load the model: refiner weights not found" in m
                                for m in window.banner.messages()), timeout=5000)
    frames = window.video.frames_shown
    qtbot.waitUntil(lambda: window.video.frames_shown > frames + 3, timeout=3000)  # the video still plays
    window.model_panel.refiner_boxes[0].click()
    poses_after(qtbot, window)
    assert services.choices[-1].refiners == ()
    window.close()


def test_real_session_loads_the_refiners(tmp_path):
    """Custom weights: the chain comes from that file's folder; shipped weights: from models/."""
    import torch

    from posetracker.refiners import build_refiner, save_refiner
    from posetracker.skeletons import load_skeleton
    from posetracker.weights_file import MODELS_DIR
    from ui.services import ModelChoice, real_session

    torch.set_num_threads(1)
    weights = tmp_path / "posenet-human18.safetensors"
    weights.symlink_to(MODELS_DIR / "posenet-human18.safetensors")
    save_refiner(build_refiner("graph", load_skeleton("human18")), tmp_path / "refiner-graph-human18.safetensors", {})
    session = real_session(ModelChoice(weights=weights, refiners=("graph",)))
    assert session.refiners.names == ["graph"] and session.config.refine.refiners == ("graph",)
    with pytest.raises(RefinerError, match=str(tmp_path)):
        real_session(ModelChoice(weights=weights, refiners=("heatmap",)))
    shipped = real_session(ModelChoice(refiners=("graph",), max_people=2))
    assert shipped.refiners.names == ["graph"] and shipped.config.refine.refiners == ("graph",)
    assert shipped.config.people.max_people == 2 == shipped.decoder.max_people
    assert shipped.refiners.refiners[0].gnn.adjacency.shape == (18, 18)
    with pytest.raises(RefinerError, match="models"):
        real_session(ModelChoice(refiners=("heatmap",)))  # not shipped for people


def test_command_line_model_choice_reaches_the_session(qtbot, clip):
    """``main.py --skeleton mouse4 --refiners graph``: the first session is built with both."""
    window = make_window(qtbot, BOTH)
    window.select_model("mouse4", ("graph", "heatmap"))  # mouse4 has no heatmap refiner: dropped
    assert window.state.skeleton == "mouse4" and window.state.refiners == ("graph",)
    assert window.model_panel.skeleton.currentData() == "mouse4" and kinds(window) == ["graph"]
    window.open_source(str(clip))
    poses_after(qtbot, window)
    first = window.services.choices[0]
    assert first.skeleton == "mouse4" and first.refiners == ("graph",)


def test_max_people_rebuilds_the_session_and_persists(qtbot, clip):
    window = make_window(qtbot, BOTH)
    panel, choices = window.model_panel, window.services.choices
    assert panel.max_people.value() == DEFAULT_MAX_PEOPLE == window.state.max_people
    window.open_source(str(clip))
    poses_after(qtbot, window)
    assert choices[-1].max_people == DEFAULT_MAX_PEOPLE
    asked = len(choices)
    panel.max_people.setValue(1)
    qtbot.waitUntil(lambda: len(choices) > asked, timeout=3000)
    assert choices[-1].max_people == 1 and choices[-1].mode == "live"
    with qtbot.waitSignal(window.controller.processing_done, timeout=8000):
        window.set_mode("offline")
    assert choices[-1].mode == "offline" and choices[-1].max_people == 1
    window.close()
    again = make_window(qtbot, BOTH)
    assert again.state.max_people == 1 and again.model_panel.max_people.value() == 1
    assert again.live_factory().args[0].max_people == 1
    again.close()


def test_an_exact_count_reaches_the_session_and_persists(qtbot, clip):
    """"exactly" beside Max people: the session keeps that many readings a frame (a known number of animals)."""
    window = make_window(qtbot, BOTH)
    panel, choices = window.model_panel, window.services.choices
    assert not panel.exact.isChecked() and not window.state.exact_count
    window.open_source(str(clip))
    poses_after(qtbot, window)
    assert not choices[-1].exact_count
    asked = len(choices)
    panel.max_people.setValue(1)
    qtbot.waitUntil(lambda: len(choices) > asked, timeout=3000)
    asked = len(choices)
    panel.exact.setChecked(True)
    qtbot.waitUntil(lambda: len(choices) > asked, timeout=3000)
    assert choices[-1].exact_count and choices[-1].max_people == 1
    window.close()
    again = make_window(qtbot, BOTH)
    assert again.state.exact_count and again.model_panel.exact.isChecked()
    assert again.live_factory().args[0].exact_count
    again.select_model("mouse4", ("graph",))  # another skeleton keeps what the panel shows
    assert again.model_panel.exact.isChecked() and again.model_panel.max_people.value() == 1
    again.close()
    from ui.services import real_session

    session = real_session(ModelChoice(skeleton="mouse4", mode="offline", max_people=1, exact_count=True))
    assert session.config.people.known_count == 1 and session.decoder.min_people == 1
    assert real_session(ModelChoice(skeleton="mouse4", max_people=2)).decoder.min_people == 0


@pytest.fixture
def dummy_refiner(tmp_path, monkeypatch):
    """A third refiner kind, registered for the test only, with a weights file for human18."""
    import posetracker.refiners.base as base
    from posetracker.refiners import Refiner, register_refiner, unregister_refiner

    class DummyRefiner(Refiner):
        kind = "dummy"
        label = "Dummy refiner (test)"

    shipped = base.refiner_path

    def refiner_path(kind, skeleton, models_dir=base.MODELS_DIR):  # the dummy's weights live in tmp_path
        return shipped(kind, skeleton, tmp_path if kind == "dummy" else models_dir)

    register_refiner("dummy")(DummyRefiner)
    refiner_path("dummy", "human18").write_bytes(b"")
    monkeypatch.setattr(base, "refiner_path", refiner_path)
    yield "dummy"
    unregister_refiner("dummy")


def test_a_registered_refiner_plugs_into_the_command_lines_and_the_panel(qtbot, dummy_refiner, capsys):
    """No list of kinds to edit: the CLI, the app's options and its Refiners panel read the registry."""
    from posetracker.cli import build_parser
    from ui.app import parse_args

    for verb in (["process", "in.mp4"], ["eval", "--data", "x"], ["bench"],
                 ["train", "clip-eval", "--config", "c", "--weights", "w"]):
        assert build_parser().parse_args([*verb, "--refiners", "graph", "dummy"]).refiners == ["graph", "dummy"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["process", "--help"])
    assert "registered: crop, crop-fast, dummy, graph, heatmap" in " ".join(capsys.readouterr().out.split())
    assert parse_args(["--refiners", "dummy"]).refiners == ["dummy"]
    window = make_window(qtbot)  # the real lister: kinds with weights for human18
    assert "dummy" in kinds(window)
    box = window.model_panel.refiner_boxes[kinds(window).index("dummy")]
    assert box.text() == "Dummy refiner (test)"
    before = window.state.refiners  # a first run: the live defaults
    box.click()
    assert window.state.refiners == (*before, "dummy")
    window.close()


def test_an_unregistered_refiner_is_refused_with_the_choices(capsys):
    from posetracker.cli import build_parser

    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["process", "in.mp4", "--refiners", "dummy"])
    assert exit_.value.code == 2
    assert "invalid choice: 'dummy' (choose from 'crop', 'crop-fast', 'graph', 'heatmap')" in capsys.readouterr().err


def test_choosing_mouse4_ticks_the_refiners_it_runs_by_default(qtbot, monkeypatch):
    """mouse4 names its heatmap and graph refiners as its defaults (issue #49): picking it in the app ticks them
    (live, where two CPUs are usable), as posetracker process runs them."""
    from posetracker import cpu_threads

    monkeypatch.setattr(cpu_threads, "usable_cpus", lambda: 2)
    window = make_window(qtbot)  # the real lister: the refiners shipped in models/
    assert window.state.refiners == () or "crop-fast" in window.state.refiners
    choose_skeleton(window, "mouse4")
    assert sorted(window.model_panel.checked_refiners()) == ["graph", "heatmap"]
    assert sorted(window.live_factory().args[0].refiners) == ["graph", "heatmap"]
    window.close()

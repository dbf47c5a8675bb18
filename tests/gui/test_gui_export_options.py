"""The app's Export options: the library's choices (floor, foot lock, origin) as a form, passed to the exporter;
cancelling writes nothing. Left and right are not an export choice: the session decided them (motion.sides)."""

from __future__ import annotations

import json

import pytest

from gui_helpers import isolated_settings, no_modal_dialogs, window  # noqa: F401
from posetracker.export.choices import chosen_options, export_choices


def test_library_choices_apply_only_where_they_mean_something():
    assert chosen_options("bvh", {}) == {"origin": "floor", "floor": "fit"}
    assert chosen_options("bvh", {"floor": "percentile"}) == {"origin": "floor", "floor": "percentile"}
    assert chosen_options("bvh", {"origin": "camera", "floor": "percentile"}) == {"origin": "camera"}
    assert chosen_options("trc", {"origin": "floor"}) == {"origin": "floor"}
    assert chosen_options("csv", {}) == {} and export_choices("csv") == ()
    with pytest.raises(ValueError, match="no export choice"):
        chosen_options("trc", {"floor": "fit"})
    with pytest.raises(ValueError, match="choose one of"):
        chosen_options("bvh", {"floor": "flat"})
    for name in ("bvh", "trc"):
        with pytest.raises(ValueError, match="no export choice"):
            chosen_options(name, {"repair_legs": False})


def test_the_bvh_form_greys_out_what_does_not_apply(qtbot):
    from ui.export_dialog import ExportOptionsDialog

    dialog = ExportOptionsDialog("bvh", "/tmp/walk.bvh")
    qtbot.addWidget(dialog)
    assert dialog.options() == {"origin": "floor", "floor": "fit"}
    assert "repair_legs" not in dialog.widgets and "foot_lock" not in dialog.widgets  # the session plants the feet
    floor = dialog.widgets["floor"]
    assert floor.isEnabled()
    dialog.set_choice("floor", "percentile")
    assert dialog.options() == {"origin": "floor", "floor": "percentile"}
    dialog.set_choice("origin", "camera")
    assert not floor.isEnabled() and dialog.options() == {"origin": "camera"}
    with pytest.raises(ValueError):
        dialog.set_choice("origin", "moon")


def test_the_app_exports_with_the_chosen_floor_and_cancel_writes_nothing(qtbot, window, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog, QLabel

    from test_bvh_synthetic import make_sequence
    from ui.export_dialog import ExportOptionsDialog

    window.sequence = make_sequence(40)
    target = tmp_path / "walk.bvh"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(target), "")))

    shown = []

    def choose_percentile(dialog):
        shown.append(dialog.findChild(QLabel, "export_contents").text())
        dialog.set_choice("floor", "percentile")
        return ExportOptionsDialog.DialogCode.Accepted

    monkeypatch.setattr(ExportOptionsDialog, "exec", choose_percentile)
    window.ask_export("bvh")
    qtbot.waitUntil(lambda: not window._jobs, timeout=10000)
    report = json.loads((tmp_path / "walk.bvh.json").read_text())
    assert report["floor"]["reason"] == "floor=percentile" and "foot_lock" not in report
    # the dialog says which people and frames it writes (issue #50 item 5)
    assert shown == [f"Writing {target}\n1 person (id 0), frames 0-39 (40 frames, 1.3 s)"]

    monkeypatch.setattr(ExportOptionsDialog, "exec", lambda dialog: ExportOptionsDialog.DialogCode.Rejected)
    target.unlink()
    window.ask_export("bvh")
    qtbot.wait(100)
    assert not window._jobs and not target.exists()

    trc = tmp_path / "walk.trc"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(trc), "")))

    def floor_origin(dialog):
        dialog.set_choice("origin", "floor")
        return ExportOptionsDialog.DialogCode.Accepted

    monkeypatch.setattr(ExportOptionsDialog, "exec", floor_origin)
    window.ask_export("trc")
    qtbot.waitUntil(lambda: not window._jobs, timeout=10000)
    camera = tmp_path / "camera.trc"
    window.export_to(camera, "trc")
    qtbot.waitUntil(lambda: not window._jobs, timeout=10000)
    assert trc.read_text() != camera.read_text()  # Y up from the floor, not camera axes


def test_a_format_without_choices_asks_nothing(qtbot, window, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    from test_bvh_synthetic import make_sequence
    from ui.export_dialog import ExportOptionsDialog

    window.sequence = make_sequence(10)
    target = tmp_path / "poses.csv"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(target), "")))
    monkeypatch.setattr(ExportOptionsDialog, "exec", lambda dialog: pytest.fail("an options dialog for CSV"))
    window.ask_export("csv")
    qtbot.waitUntil(lambda: not window._jobs, timeout=10000)
    assert target.is_file()


def test_an_export_of_a_live_result_has_one_length_per_bone(tmp_path):
    """The live view's bones are a running median; what the app writes afterwards has the recording's lengths."""
    import dataclasses

    import numpy as np

    from posetracker.export import get_exporter
    from posetracker.export.json_io import read_sequence
    from posetracker.tracking import bone_lengths
    from test_bones import noisy_sequence
    from ui.jobs import ExportJob

    seq, frames, anatomical = noisy_sequence(people=1, seed=5, frames=40)
    live = dataclasses.replace(seq, frames=frames, metadata={"mode": "live", "source": "camera 0"})
    job = ExportJob(get_exporter("json"), live, tmp_path / "live.json")
    written = []
    job.signals.done.connect(written.extend)
    job.run()
    assert written
    back = read_sequence(tmp_path / "live.json")
    spec = back.skeleton
    lengths = np.stack([bone_lengths(f.world, spec) for f in back.frames])[..., anatomical]
    assert lengths.std(0).max() < 1e-4 and back.metadata["bones"] == "recording"
    # finished as posetracker process --mode live finishes its run (motion.finish): a camera, the encounters
    assert back.metadata["camera"]["source"] in ("estimated", "default") and back.metadata["encounters"] == []

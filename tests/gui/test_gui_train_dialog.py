"""Tools > Train animal mode (ui/train_dialog.py), offscreen, with a fake trainer (no real training): the
progress bar follows the trainer, the report shows at the end and the new mode joins the Mode and model panel
(its refiners listed from its folder), errors are messages, Cancel stops the run."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import yaml

from gui_helpers import fake_services, isolated_settings, no_modal_dialogs  # noqa: F401
from posetracker.skeletons import SKELETON_DIR
from posetracker.train.user_mode import TrainingCancelled, TrainingError, UserModeResult, read_user_mode
from ui.train_dialog import STEPS_PER_MINUTE, TrainDialog

pytestmark = [pytest.mark.gui, pytest.mark.qt_log_level_fail("WARNING"),
              pytest.mark.qt_log_ignore("propagateSizeHints", "does not support raise")]

REPORT = {"name": "my_mouse", "steps": 4, "minutes": 0.1, "train_items": 8, "samples": 64, "held_out_items": 2,
          "held_out": {"none": {"pck@0.1": 0.5, "pck@0.2": 0.75, "mean_px": 4.0, "median_px": 3.0, "found": 2,
                                "instances": 2},
                       "graph": {"pck@0.1": 0.625, "pck@0.2": 0.875, "mean_px": 3.5, "median_px": 2.5, "found": 2,
                                 "instances": 2}}}


def write_mode(modes: Path, name: str) -> Path:
    """What create_user_mode installs, with placeholder weights: mouse4's skeleton renamed, a refiner file."""
    folder = modes / name
    folder.mkdir(parents=True)
    data = yaml.safe_load((SKELETON_DIR / "mouse4.yaml").read_text())
    data["name"] = name
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    (folder / f"refiner-graph-{name}.safetensors").write_bytes(b"placeholder")
    (folder / f"posenet-{name}.safetensors").write_bytes(b"placeholder")
    return folder


class FakeTrainer:
    """Stands in for create_user_mode: reports import and half the training, then waits for ``gate`` (or a
    cancel); ``error``: raised after the first progress."""

    def __init__(self, modes: Path, error: Exception | None = None):
        self.modes, self.error = modes, error
        self.gate = threading.Event()
        self.calls: list[tuple] = []
        self.saw_cancel = False

    def __call__(self, project, name, steps=None, progress=None, cancel=None, log=None, threads=1):
        self.calls.append((project, name, steps, threads))
        progress(0, 0, "Importing the labels…")
        if self.error is not None:
            raise self.error
        progress(2, 4, "Training: step 2 / 4, loss 1.000")
        while not self.gate.wait(0.01):
            if cancel():
                self.saw_cancel = True
                raise TrainingCancelled("training cancelled after 2 of 4 steps")
        progress(4, 4, "Training: step 4 / 4, loss 0.500")
        folder = write_mode(self.modes, name)
        mode = read_user_mode(folder)
        return UserModeResult(name, mode.weights, folder / f"refiner-graph-{name}.safetensors", {**REPORT, "name": name},
                              folder / "report.json", mode=mode)


@pytest.fixture
def modes(tmp_path, monkeypatch):
    monkeypatch.setenv("POSETRACKER_MODES", str(tmp_path / "modes"))
    return tmp_path / "modes"


@pytest.fixture
def project(tmp_path):
    proj = tmp_path / "openfield-me-2024"
    proj.mkdir()
    (proj / "config.yaml").write_text("Task: openfield\n")
    return proj


def make_dialog(qtbot, trainer) -> TrainDialog:
    dialog = TrainDialog(trainer)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def make_window(qtbot, trainer):
    from ui.main_window import MainWindow

    services = fake_services()
    services.weights_path = lambda skeleton: Path(__file__)  # every shipped skeleton selectable
    services.train_mode = trainer
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.show()
    return window


def labels(combo) -> list[str]:
    return [combo.itemText(i) for i in range(combo.count())]


def test_training_from_the_menu_adds_the_mode_to_the_panel(qtbot, modes, project):
    from PySide6.QtGui import QAction

    trainer = FakeTrainer(modes)
    window = make_window(qtbot, trainer)
    combo = window.model_panel.skeleton
    assert not any("user-trained" in t for t in labels(combo))
    window.findChild(QAction, "train_mode_action").trigger()
    dialog = window.train_dialog
    assert dialog is not None and dialog.isVisible()

    dialog.project.setText(str(project))
    assert dialog.name.text() == "openfield"  # suggested from the DeepLabCut folder
    dialog.name.setText("my mouse")
    dialog.set_length(2, "minutes")
    dialog.start.click()
    # the bar and the stage follow the trainer's progress; the inputs are locked while it runs
    qtbot.waitUntil(lambda: dialog.progress.maximum() == 4 and dialog.progress.value() == 2, timeout=5000)
    assert dialog.stage.text() == "Training: step 2 / 4, loss 1.000"
    assert dialog.running() and not dialog.start.isEnabled() and dialog.cancel.isEnabled()
    assert not dialog.project.isEnabled() and not dialog.name.isEnabled()
    assert trainer.calls == [(str(project), "my_mouse", 2 * STEPS_PER_MINUTE, 1)]

    trainer.gate.set()
    qtbot.waitUntil(lambda: not dialog.running(), timeout=5000)
    report = dialog.report.toPlainText()
    assert "PCK@0.1" in report and "0.625" in report and "Held-out frames: 2" in report
    assert dialog.stage.text() == "Done: mode 'my_mouse' is installed." and dialog.progress.value() == 1
    assert dialog.start.isEnabled() and not dialog.cancel.isEnabled()

    # the new mode is in the selector without a restart; choosing it lists the refiner in its folder
    mode_yaml = str(modes / "my_mouse" / "my_mouse.yaml")
    index = combo.findData(mode_yaml)
    assert index >= 0 and combo.itemText(index) == "Animal (my_mouse, user-trained)"
    assert combo.model().item(index).isEnabled()
    combo.setCurrentIndex(index)
    combo.activated.emit(index)
    assert window.state.skeleton == mode_yaml and window.spec.name == "my_mouse"
    assert [box.property("kind") for box in window.model_panel.refiner_boxes] == ["graph"]
    assert window.live_factory().args[0].skeleton == mode_yaml  # the session is built from the mode's files

    # the same name again: refused before anything runs
    dialog.start.click()
    assert "already exists" in dialog.message.text() and len(trainer.calls) == 1


@pytest.mark.parametrize("error, shown", [
    (TrainingError("project not readable: no config.yaml in /x"), "project not readable: no config.yaml in /x"),
    (RuntimeError("boom"), "Training failed: boom"),
])
def test_an_error_is_a_message(qtbot, modes, project, error, shown):
    dialog = make_dialog(qtbot, FakeTrainer(modes, error))
    dialog.project.setText(str(project))
    dialog.start.click()
    qtbot.waitUntil(lambda: not dialog.running(), timeout=5000)
    assert dialog.message.text() == shown and "Traceback" not in dialog.message.text()
    assert dialog.stage.text() == "Stopped." and dialog.report.toPlainText() == ""
    assert dialog.start.isEnabled() and dialog.trained is None


def test_cancel_stops_the_run(qtbot, modes, project):
    trainer = FakeTrainer(modes)
    dialog = make_dialog(qtbot, trainer)
    seen = []
    dialog.mode_trained.connect(seen.append)
    dialog.project.setText(str(project))
    dialog.start.click()
    qtbot.waitUntil(lambda: dialog.progress.value() == 2, timeout=5000)
    dialog.reject()  # Close while training cancels first; the dialog stays until the run stopped
    assert dialog.isVisible() and dialog.stage.text() == "Cancelling after the current step…"
    qtbot.waitUntil(lambda: not dialog.running(), timeout=5000)
    assert trainer.saw_cancel and dialog.stage.text() == "Cancelled." and "no mode was made" in dialog.message.text()
    assert seen == [] and not modes.exists() and dialog.start.isEnabled()
    dialog.reject()
    assert not dialog.isVisible()


def test_inputs_are_checked_before_starting(qtbot, modes, project, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    trainer = FakeTrainer(modes)
    dialog = make_dialog(qtbot, trainer)
    dialog.start.click()
    assert "Choose a project" in dialog.message.text()
    dialog.project.setText(str(tmp_path / "missing.slp"))
    assert dialog.name.text() == "missing"
    dialog.start.click()
    assert "Project not found" in dialog.message.text()
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(project)))
    dialog.browse_dlc.click()
    assert dialog.project.text() == str(project) and dialog.name.text() == "openfield"
    dialog.name.setText("mouse4")
    dialog.start.click()
    assert "shipped" in dialog.message.text() and trainer.calls == [] and not dialog.running()
    # minutes <-> steps
    dialog.set_length(5, "minutes")
    assert dialog.steps() == 5 * STEPS_PER_MINUTE and f"{5 * STEPS_PER_MINUTE} training steps" in dialog.length_hint.text()
    dialog.unit.setCurrentText("steps")
    assert dialog.length.value() == 5 * STEPS_PER_MINUTE and dialog.steps() == 5 * STEPS_PER_MINUTE
    dialog.length.setValue(50)
    dialog.unit.setCurrentText("minutes")
    assert dialog.length.value() == 1

"""Tools > Batch process videos (ui/batch_dialog.py), offscreen, with a fake run_batch injected through Services
(no Ray, no inference): the chosen settings reach the call, progress records fill the table and the bar, the
summary line names the manifest, errors are messages, Cancel makes the call's cancel() True. And run_batch's
``cancel`` argument itself, without starting Ray (a stand-in ``ray`` module drives the real task loop)."""

from __future__ import annotations

import json
import sys
import threading
import types
from pathlib import Path

import pytest

from gui_helpers import fake_services, isolated_settings, no_modal_dialogs  # noqa: F401
from posetracker.batch import MANIFEST, BatchError, BatchSettings, BatchSummary, read_manifest, run_batch
from ui.batch_dialog import DEFAULT_WORKERS, BatchDialog, batch_skeletons

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"),
              pytest.mark.qt_log_ignore("propagateSizeHints", "does not support raise", "does not support activat")]
gui = pytest.mark.gui


def record(path: Path, rel: str, status: str = "done", frames: int = 30, error: str = "",
           settings: BatchSettings | None = None) -> dict:
    return {"input": str(path.resolve()), "rel": rel, "sha256": "0" * 64, "model": "m" * 16,
            "settings": (settings or BatchSettings()).key(), "status": status, "frames": frames if status == "done" else 0,
            "seconds": 1.25, "outputs": [], "error": error, "time": "2024-01-01T00:00:00"}


class FakeBatch:
    """Stands in for run_batch: reports its records one by one, waiting for ``gate`` (or a cancel) after the first;
    ``error``: raised before any record. Appends each record to the manifest, as run_batch does."""

    def __init__(self, records: list[dict] | None = None, error: Exception | None = None, skipped: int = 0):
        self.records, self.error, self.skipped = records or [], error, skipped
        self.gate = threading.Event()
        self.calls: list[dict] = []
        self.saw_cancel = False

    def __call__(self, inputs, out_dir, settings=BatchSettings(), workers=None, progress=None, cancel=None,
                 frame_progress=None, **kw):
        self.calls.append({"inputs": list(inputs), "out": str(out_dir), "settings": settings, "workers": workers})
        if self.error is not None:
            raise self.error
        summary = BatchSummary(skipped=self.skipped)
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        for i, rec in enumerate(self.records):
            if i == 1:
                while not self.gate.wait(0.01):
                    if cancel():
                        self.saw_cancel = True
                        summary.cancelled = True
                        return summary
            with open(Path(out_dir) / MANIFEST, "a") as f:
                f.write(json.dumps(rec) + "\n")
            if rec["status"] == "done":
                summary.done += 1
                summary.frames += rec["frames"]
            else:
                summary.failed.append(rec)
            progress(rec, i + 1, len(self.records))
            frame_progress(10 * (i + 1), 10 * len(self.records))  # as the tasks' FrameCounter would
        summary.seconds = 4.5
        return summary


@pytest.fixture
def videos(tmp_path):
    """Three "videos" in a folder (the fake never decodes them), one file outside it, one done by an earlier run."""
    folder = tmp_path / "archive"
    (folder / "b").mkdir(parents=True)
    for rel in ("walk.mp4", "b/turn.mp4", "b/broken.mp4"):
        (folder / rel).write_bytes(b"not decoded by the fake")
    (tmp_path / "extra.mp4").write_bytes(b"x")
    (tmp_path / "old.mp4").write_bytes(b"y")
    return tmp_path


def make_window(qtbot, runner):
    from ui.main_window import MainWindow

    services = fake_services()
    services.weights_path = lambda skeleton: Path(__file__)  # every shipped skeleton has "weights"
    services.run_batch = runner
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.show()
    return window


def make_dialog(qtbot, runner) -> BatchDialog:
    from ui.services import model_options

    dialog = BatchDialog(runner, batch_skeletons(model_options(lambda s: Path(__file__))))
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def table(dialog) -> list[list[str]]:
    t = dialog.table
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


@gui
def test_a_batch_from_the_menu_runs_with_the_chosen_settings(qtbot, videos, monkeypatch):
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QFileDialog

    out = videos / "out"
    chosen = BatchSettings(formats=("bvh", "csv"), mode="live", skeleton="mouse4")
    folder = videos / "archive"
    runner = FakeBatch([record(folder / "walk.mp4", "walk.mp4", settings=chosen),
                        record(folder / "b" / "turn.mp4", "b/turn.mp4", frames=12, settings=chosen),
                        record(folder / "b" / "broken.mp4", "b/broken.mp4", "failed",
                               error="RuntimeError: no frame could be read", settings=chosen)], skipped=1)
    out.mkdir()  # an earlier run did old.mp4 with these settings: it is skipped, its row says so
    (out / MANIFEST).write_text(json.dumps(record(videos / "old.mp4", "old.mp4", frames=7, settings=chosen)) + "\n")
    window = make_window(qtbot, runner)
    window.findChild(QAction, "batch_action").trigger()
    dialog = window.batch_dialog
    assert dialog is not None and dialog.isVisible() and not dialog.isModal()
    window.findChild(QAction, "batch_action").trigger()
    assert window.batch_dialog is dialog  # one instance

    # defaults: csv only, offline, human18, one worker (the GUI keeps a core)
    assert dialog.formats() == ("csv",) and dialog.mode.currentText() == "offline"
    assert dialog.skeleton.currentData() == "human18" and dialog.workers.value() == DEFAULT_WORKERS == 1
    assert "keeps a core" in dialog.workers.toolTip()
    assert dialog.skeleton.findData("mouse4") >= 0

    monkeypatch.setattr(QFileDialog, "getOpenFileNames",
                        staticmethod(lambda *a, **k: ([str(videos / "extra.mp4"), str(videos / "old.mp4")], "")))
    dialog.add_files.click()
    dirs = iter([str(folder), str(out)])
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: next(dirs)))
    dialog.add_folder.click()
    dialog.browse_output.click()
    assert dialog.inputs() == [str(videos / "extra.mp4"), str(videos / "old.mp4"), str(folder)]
    assert dialog.output.text() == str(out)
    dialog.input_list.item(0).setSelected(True)  # extra.mp4 is not wanted after all
    dialog.remove.click()
    assert dialog.inputs() == [str(videos / "old.mp4"), str(folder)]

    dialog.set_formats(["csv", "bvh"])
    dialog.mode.setCurrentText("live")
    dialog.skeleton.setCurrentIndex(dialog.skeleton.findData("mouse4"))
    dialog.workers.setValue(2)
    dialog.start.click()
    # the first record is in the table and the bar; the inputs are locked while it runs
    qtbot.waitUntil(lambda: dialog.progress.maximum() == 3 and dialog.progress.value() == 1, timeout=5000)
    assert runner.calls == [{"inputs": [str(videos / "old.mp4"), str(folder)], "out": str(out),
                             "settings": chosen, "workers": 2}]
    assert table(dialog) == [["walk.mp4", "done", "30", "1.2", ""]]
    assert dialog.running() and not dialog.start.isEnabled() and dialog.cancel.isEnabled()
    assert not dialog.input_list.isEnabled() and not dialog.format_boxes["csv"].isEnabled()

    runner.gate.set()
    qtbot.waitUntil(lambda: not dialog.running(), timeout=5000)
    assert table(dialog) == [["walk.mp4", "done", "30", "1.2", ""],
                             ["b/turn.mp4", "done", "12", "1.2", ""],
                             ["b/broken.mp4", "failed", "0", "1.2", "RuntimeError: no frame could be read"],
                             ["old.mp4", "skipped", "7", "", "already done by an earlier run"]]
    assert dialog.progress.value() == dialog.progress.maximum() == 3
    assert dialog.frames_bar.value() == dialog.frames_bar.maximum() == 30  # the frames the tasks reported
    assert dialog.summary_label.text() == (f"Finished: 2 done, 1 skipped (already done), 1 failed; 42 frames in 4.5 s.\n"
                                           f"Manifest: {out / MANIFEST}")
    assert "1 video failed" in dialog.message.text()
    assert dialog.start.isEnabled() and not dialog.cancel.isEnabled() and dialog.input_list.isEnabled()


@gui
@pytest.mark.parametrize("error, shown", [
    (BatchError("no video among the inputs"), "no video among the inputs"),
    (PermissionError(13, "Permission denied", "/out/manifest.jsonl"), "Cannot write to the output folder: "),
    (RuntimeError("boom"), "The batch failed: boom"),
])
def test_an_error_is_a_message(qtbot, videos, error, shown):
    runner = FakeBatch(error=error)
    dialog = make_dialog(qtbot, runner)
    dialog.add_inputs([str(videos / "extra.mp4")])
    dialog.output.setText(str(videos / "out"))
    dialog.start.click()
    qtbot.waitUntil(lambda: not dialog.running(), timeout=5000)
    assert dialog.message.text().startswith(shown) and "Traceback" not in dialog.message.text()
    assert dialog.status.text() == "Stopped." and dialog.table.rowCount() == 0 and dialog.summary is None
    assert dialog.start.isEnabled() and len(runner.calls) == 1


@gui
def test_inputs_are_checked_before_starting(qtbot, videos, monkeypatch):
    runner = FakeBatch()
    dialog = make_dialog(qtbot, runner)
    assert not dialog.remove.isEnabled()
    dialog.start.click()
    assert dialog.message.text() == "Add videos or folders to process."
    dialog.add_inputs([str(videos / "extra.mp4"), str(videos / "extra.mp4")])
    assert dialog.inputs() == [str(videos / "extra.mp4")] and dialog.remove.isEnabled()
    dialog.start.click()
    assert dialog.message.text() == "Choose an output folder."
    dialog.output.setText(str(videos / "extra.mp4"))
    dialog.start.click()
    assert dialog.message.text().startswith("The output is not a folder")
    dialog.output.setText(str(videos / "new" / "out"))
    dialog.set_formats([])
    dialog.start.click()
    assert dialog.message.text() == "Choose at least one output format."
    dialog.set_formats(["csv"])
    monkeypatch.setattr("ui.batch_dialog.os.access", lambda path, mode: False)
    dialog.start.click()
    assert dialog.message.text() == f"The output folder is not writable: {videos}"
    assert runner.calls == [] and not dialog.running()


@gui
def test_cancel_stops_the_run(qtbot, videos):
    folder = videos / "archive"
    runner = FakeBatch([record(folder / "walk.mp4", "walk.mp4"), record(folder / "b" / "turn.mp4", "b/turn.mp4"),
                        record(folder / "b" / "broken.mp4", "b/broken.mp4")])
    dialog = make_dialog(qtbot, runner)
    dialog.add_inputs([str(folder)])
    dialog.output.setText(str(videos / "out"))
    dialog.start.click()
    qtbot.waitUntil(lambda: dialog.progress.value() == 1, timeout=5000)
    dialog.reject()  # Close while running cancels first; the dialog stays until the run stopped
    assert dialog.isVisible() and dialog.status.text().startswith("Cancelling")
    qtbot.waitUntil(lambda: not dialog.running(), timeout=5000)
    assert runner.saw_cancel and dialog.summary.cancelled
    assert dialog.summary_label.text().startswith("Cancelled: 1 done, 0 skipped (already done), 0 failed, "
                                                  "2 not processed; 30 frames")
    assert dialog.status.text().startswith("Cancelled")
    assert table(dialog) == [["walk.mp4", "done", "30", "1.2", ""], ["b/broken.mp4", "not processed", "", "", ""],
                             ["b/turn.mp4", "not processed", "", "", ""]]
    assert dialog.start.isEnabled() and not dialog.cancel.isEnabled()
    dialog.reject()
    assert not dialog.isVisible()


# ---------------------------------------------------------------------------------- run_batch(cancel=...), no Ray


class Ref:
    """A stand-in ObjectRef (hashable, by identity) holding its task's record."""

    def __init__(self, rec: dict):
        self.rec = rec


class FakeRay(types.ModuleType):
    """The bits of ``ray`` that batch._run_on_ray uses: each wait returns the oldest task, already "finished"."""

    def __init__(self):
        super().__init__("ray")
        self.up, self.init_kwargs, self.waits, self.cancelled, self.shut = False, None, [], [], False

    def is_initialized(self):
        return self.up

    def init(self, **kwargs):
        self.up, self.init_kwargs = True, kwargs

    def shutdown(self):
        self.up, self.shut = False, True

    def remote(self, **options):
        class Task:
            @staticmethod
            def remote(path, rel, out, settings, model, sha, counter=None):  # counter: None without frame_progress
                return Ref({"input": path, "rel": rel, "sha256": sha, "model": model,
                                                  "settings": settings.key(), "status": "done", "frames": 5,
                                                  "seconds": 0.1, "outputs": [], "error": "", "time": "t"})
        return lambda fn: Task

    def wait(self, refs, num_returns=1, timeout=None):
        self.waits.append(timeout)
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        return ref.rec

    def cancel(self, ref, **kwargs):
        self.cancelled.append(ref.rec["rel"])


@pytest.fixture
def three(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # restored after the test
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a.mp4", "b.mp4", "c.mp4"):
        (folder / name).write_bytes(name.encode())
    return folder


def test_run_batch_cancelled_from_the_start_does_nothing(three, tmp_path):
    had_ray = "ray" in sys.modules
    summary = run_batch([str(three)], tmp_path / "out", cancel=lambda: True)
    assert summary.cancelled and summary.done == summary.skipped == 0 and not summary.failed
    assert not (tmp_path / "out" / MANIFEST).exists()
    assert ("ray" in sys.modules) == had_ray  # Ray was never imported for it


def test_run_batch_cancel_stops_collecting_and_cancels_the_rest(three, tmp_path, monkeypatch):
    ray = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", ray)
    seen = []
    summary = run_batch([str(three)], tmp_path / "out", workers=1, progress=lambda rec, done, total: seen.append(
        (rec["rel"], done, total)), cancel=lambda: len(seen) >= 1)
    assert summary.cancelled and summary.done == 1 and summary.frames == 5 and not summary.failed
    assert seen == [("a.mp4", 1, 3)] and ray.cancelled == ["b.mp4", "c.mp4"] and ray.shut
    assert [Path(k).name for k in read_manifest(tmp_path / "out")] == ["a.mp4"]  # the finished one is recorded
    assert ray.waits == [0.25]  # with a cancel, the wait polls it

    ray2 = FakeRay()  # a cancel that never fires: the whole batch, not cancelled; the rerun skips a.mp4
    monkeypatch.setitem(sys.modules, "ray", ray2)
    summary = run_batch([str(three)], tmp_path / "out", workers=1, cancel=lambda: False)
    assert not summary.cancelled and (summary.done, summary.skipped) == (2, 1) and ray2.cancelled == []
    ray3 = FakeRay()  # without cancel: the wait blocks as before
    monkeypatch.setitem(sys.modules, "ray", ray3)
    summary = run_batch([str(three)], tmp_path / "out2", workers=1)
    assert not summary.cancelled and summary.done == 3 and ray3.waits == [None] * 3

"""The base of the dialogs that run one long job in a worker thread (Train animal mode, Batch process videos).

A subclass builds its widgets (among them ``message``, a QLabel, and the Start / Cancel / Close row from
:meth:`button_row`), hands a :class:`StoppableWorker` to :meth:`launch`, and lists the widgets a run locks in
``_set_running(busy)``. This class owns the thread: one run at a time, Cancel / Close / Esc during a run ask
the worker to stop (the dialog stays until the run has stopped; ``cancelling`` says so), and the app's quit
waits for it (``shutdown``).
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QCoreApplication, QObject, Qt, QThread, Signal, Slot
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QPushButton, QWidget

ERROR_COLOR = "#b00020"


class StoppableWorker(QObject):
    """A job for :class:`WorkerDialog`: ``run`` (a slot, in the worker thread) emits ``finished`` at its end;
    ``stop()`` is thread-safe and makes ``stopping()`` True (the job checks it)."""

    finished = Signal()

    def __init__(self):
        super().__init__()
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()

    def stopping(self) -> bool:
        return self._stop.is_set()


class WorkerDialog(QDialog):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._thread: QThread | None = None
        self._worker: QObject | None = None
        self._old: tuple | None = None  # the last run's thread and worker, kept until the next run
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)

    cancelling = "Cancelling…"  # the status text while the worker winds down

    # ------------------------------------------------------------------ for subclasses

    def button_row(self) -> QDialogButtonBox:
        """Start (default) / Cancel / Close as ``self.start``, ``self.cancel``, ``self.close_button``; Cancel
        and Close are connected here, Start is the subclass's."""
        self.start = QPushButton("Start")
        self.start.setDefault(True)
        self.cancel = QPushButton("Cancel")
        self.buttons = QDialogButtonBox()
        self.buttons.addButton(self.start, QDialogButtonBox.ButtonRole.ActionRole)
        self.buttons.addButton(self.cancel, QDialogButtonBox.ButtonRole.ActionRole)
        self.close_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self.cancel.clicked.connect(self.cancel_run)
        self.close_button.clicked.connect(self.reject)
        return self.buttons

    def _set_running(self, busy: bool) -> None:
        """Lock the inputs during a run (subclasses add theirs)."""
        self.start.setEnabled(not busy)
        self.cancel.setEnabled(busy)

    def _show_status(self, text: str) -> None:
        """Where the subclass shows a one-line status (``cancelling``)."""

    def cancel_run(self) -> None:
        """Ask the running worker to stop (once)."""
        if self._worker is not None and not self._worker.stopping():
            self._worker.stop()
            self._show_status(self.cancelling)
            self.cancel.setEnabled(False)

    def launch(self, worker: QObject, name: str) -> None:
        """Run ``worker.run`` in a new thread named ``name`` (connect the worker's own signals first)."""
        self._worker = worker
        self._thread = QThread()
        self._thread.setObjectName(name)
        worker.moveToThread(self._thread)
        self._thread.started.connect(worker.run)
        worker.finished.connect(self._thread.quit, Qt.ConnectionType.DirectConnection)
        self._thread.finished.connect(self._on_thread_finished)
        self._set_running(True)
        self._thread.start()

    def launch_frames(self, worker: QObject, frames: list[int | None], name: str, message: str) -> None:
        """Run a job that counts frames: its worker's ``progress(done, total)`` moves ``self.progress`` (a
        QProgressBar over the ``frames`` of its inputs, None: unknown), ``status(str)`` shows in ``self.status``
        (a QLabel), ``done(object)`` / ``failed(str)`` go to the subclass's ``_on_done`` / :meth:`_frames_failed`."""
        worker.progress.connect(self._count_frames)
        worker.status.connect(self.status.setText)
        worker.done.connect(self._on_done)
        worker.failed.connect(self._frames_failed)
        self.progress.setRange(0, max(sum(f or 0 for f in frames), 1))
        self.progress.setValue(0)
        self.progress.setFormat("%v / %m frames")
        self.show_message(message)
        self.launch(worker, name)

    @Slot(int, int)
    def _count_frames(self, done: int, total: int) -> None:
        if total > 0:
            self.progress.setRange(0, total)
        self.progress.setValue(min(done, self.progress.maximum()))

    @Slot(str)
    def _frames_failed(self, message: str) -> None:
        self.show_message(message, error=True)
        self.status.setText("")
        self.progress.setFormat("stopped")

    # ------------------------------------------------------------------ state

    def running(self) -> bool:
        return self._thread is not None

    def show_message(self, text: str, error: bool = False) -> None:
        self.message.setStyleSheet(f"color: {ERROR_COLOR};" if error else "")
        self.message.setText(text)

    @Slot()
    def _on_thread_finished(self) -> None:
        self._old = (self._thread, self._worker)
        self._thread, self._worker = None, None
        self._set_running(False)

    def shutdown(self, timeout_s: float = 30.0) -> bool:
        """Cancel a run and wait for its thread (the app quits); True when none is left running."""
        if self._thread is None:
            return True
        if self._worker is not None:
            self._worker.stop()
        return self._thread.wait(int(timeout_s * 1000))

    # ------------------------------------------------------------------ closing

    def reject(self) -> None:
        """Close / Esc during a run: cancel first (the dialog stays until the run has stopped)."""
        if self.running():
            self.cancel_run()
            return
        super().reject()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        if self.running():
            self.cancel_run()
            event.ignore()
            return
        super().closeEvent(event)

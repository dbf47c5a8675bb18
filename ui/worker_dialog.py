"""The base of the dialogs that run one long job in a worker thread (Train animal mode, Batch process videos).

A subclass builds its widgets (among them ``message``, a QLabel), creates a worker QObject with a ``run`` slot,
a ``finished`` signal and thread-safe ``stop()`` / ``stopping()``, and hands it to :meth:`launch`; it
implements ``_set_running(busy)`` (which widgets lock) and ``cancel_run()`` (ask the worker to stop). This class
owns the thread: one run at a time, Close / Esc during a run cancel it first (the dialog stays until the run
has stopped), and the app's quit waits for it (``shutdown``).
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QCoreApplication, QObject, Qt, QThread, Signal, Slot
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QDialog, QWidget

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

    # ------------------------------------------------------------------ for subclasses

    def _set_running(self, busy: bool) -> None:
        raise NotImplementedError

    def cancel_run(self) -> None:
        raise NotImplementedError

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

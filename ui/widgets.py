"""Small widgets: the non-modal message banner and the status bar."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QStatusBar, QToolButton, QVBoxLayout, QWidget

from .packets import PipelineStats


class MessageBanner(QFrame):
    """Non-modal messages (errors, notices) above the video; each can be dismissed.

    ``key`` lets a condition replace or withdraw its own message (e.g. "window too small").
    """

    MAX = 4

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("messageBanner")
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(2)
        self._rows: list[tuple[str, str, QWidget]] = []  # (key, text, row)
        self.setVisible(False)

    def show_message(self, text: str, key: str = "", error: bool = True) -> None:
        if key:
            self.withdraw(key)
        while len(self._rows) >= self.MAX:
            self._remove(self._rows[0][2])
        row = QFrame()
        colour = "#7a1f1f" if error else "#6b5a12"
        row.setStyleSheet(f"QFrame {{ background: {colour}; border-radius: 3px; }} QLabel {{ color: white; }}")
        label = QLabel(text)
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("✕")
        close.setAutoRaise(True)
        close.clicked.connect(lambda: self._remove(row))
        box = QHBoxLayout(row)
        box.setContentsMargins(8, 3, 3, 3)
        box.addWidget(label, 1)
        box.addWidget(close)
        self._rows.append((key, text, row))
        self._layout.addWidget(row)
        self.setVisible(True)

    def withdraw(self, key: str) -> None:
        for k, _, row in list(self._rows):
            if k == key:
                self._remove(row)

    def withdraw_unkeyed(self) -> None:
        """Remove the one-off messages (those without a key), e.g. the errors of a previous source."""
        self.withdraw("")

    def _remove(self, row: QWidget) -> None:
        self._rows = [r for r in self._rows if r[2] is not row]
        row.setParent(None)
        row.deleteLater()
        self.setVisible(bool(self._rows))

    def messages(self) -> list[str]:
        return [text for _, text, _ in self._rows]


class PipelineStatusBar(QStatusBar):
    """Source fps, inference fps, end-to-end latency, dropped frames, people tracked."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.fields: dict[str, QLabel] = {}
        for key in ("source", "inference", "latency", "dropped", "people", "recording"):
            label = QLabel("")
            label.setMinimumWidth(60)
            self.fields[key] = label
            self.addPermanentWidget(label)
        self.update_stats(PipelineStats(), 0)

    def update_stats(self, stats: PipelineStats, people: int) -> None:
        texts = {"source": f"source {stats.source_fps:4.1f} fps", "inference": f"inference {stats.inference_fps:4.1f} fps",
                 "latency": f"latency {stats.latency_ms:4.0f} ms", "dropped": f"dropped {stats.dropped}",
                 "people": f"people {people}"}
        if not stats.playing:  # paused or at the end: no rates to show, rather than the last ones frozen
            texts.update(source="source paused", inference="inference idle", latency="latency -")
        for key, text in texts.items():
            if self.fields[key].text() != text:  # an unchanged label costs no relayout
                self.fields[key].setText(text)

    def set_recording(self, text: str) -> None:
        self.fields["recording"].setText(text)
        self.fields["recording"].setStyleSheet("color: #e04040; font-weight: bold;" if text else "")

"""Heights panel (issue #48): each tracked person's standing height, which scales the result to true metres.

The library does the scaling (``posetracker.motion.heights.apply_heights``: each person with a given stature
scaled about the camera's centre; pixels unchanged, depth and world scaled; ``metadata["people"]`` written).
Here: small pure functions mapping a result's people and the panel's fields to a :class:`Heights`, and the
panel (one row per person: id, the stature the result reads, a height field in metres that reads "estimated"
while empty). The window applies the heights to the whole-file result (the 3-D view and every export) and hands
them to the finishing step of a live export.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import (
    QDoubleSpinBox, QGridLayout, QHBoxLayout, QLabel, QPushButton, QScrollArea, QVBoxLayout, QWidget,
)

from posetracker.motion.finish import is_finished
from posetracker.motion.heights import MAX_HEIGHT_M, MIN_HEIGHT_M, HeightError, Heights, apply_heights
from posetracker.types import PoseSequence

NOT_GIVEN = round(MIN_HEIGHT_M - 0.01, 2)  # the height field's lowest value, shown as "estimated"
ESTIMATED = "estimated"
MEASURED = "measured"  # the empty field of a person sized by several cameras or a calibrated floor, not estimated
APPLY_DELAY_MS = 300  # the fields settle (arrow keys held, spin buttons) before the result is re-scaled
NOTE = ("Enter a person's standing height in metres to put them in true size: the whole-file result "
        "(3-D view and Export) is re-scaled at once. Live poses keep their size on screen; their exports use "
        "the heights.")


@dataclass(frozen=True)
class PersonHeight:
    """One tracked person as the result reads them: ``stature_m`` (None: unknown) and its source
    ("estimated", "given", "unknown"; "" where the result is not finished yet, a live view)."""

    track_id: int
    stature_m: float | None = None
    source: str = ""


def people_of(seq: PoseSequence | None, live_ids=()) -> list[PersonHeight]:
    """The people of a result, in id order: ``metadata["people"]`` of a finished one, else its track ids
    (``live_ids``: ids seen live, where there is no result)."""
    if seq is None:
        return [PersonHeight(int(t)) for t in sorted({int(i) for i in live_ids}) if t >= 0]
    people = (seq.metadata or {}).get("people") or {}
    rows = []
    for tid in sorted(set(seq.track_ids()) | {int(k) for k in people if str(k).lstrip("-").isdigit()}):
        entry = people.get(str(tid)) or {}
        stature = entry.get("stature_m")
        ok = isinstance(stature, (int, float)) and math.isfinite(stature)
        rows.append(PersonHeight(int(tid), float(stature) if ok else None, str(entry.get("stature_source", ""))))
    return [r for r in rows if r.track_id >= 0]


def field_height(value: float) -> float | None:
    """A height field's value -> metres, None for "estimated" (below the lowest stature)."""
    return None if value < MIN_HEIGHT_M - 1e-9 else round(float(value), 2)


def heights_from_fields(values: dict[int, float | None], everyone: float | None = None) -> Heights:
    """{track id: metres or None} -> the library's Heights (HeightError: a value no stature in metres)."""
    return Heights(everyone, {int(t): float(v) for t, v in values.items() if v is not None})


def estimated_text(person: PersonHeight) -> str:
    """What the result reads of a person's height, for the row's middle column."""
    if person.stature_m is not None and person.source in ("estimated", "given"):
        return f"{person.stature_m:.2f} m"
    if person.stature_m is not None and person.source in ("multi-view", "floor"):  # measured, not read from a pose
        return f"{person.stature_m:.2f} m ({'several cameras' if person.source == 'multi-view' else 'the floor'})"
    if person.source == "unknown":
        return "unknown (never whole)"
    return "after processing"


def scale_text(seq: PoseSequence | None, track_id: int) -> str:
    """The row's last column: how much a person given a height was scaled ("x1.15"), else ""."""
    entry = (((seq.metadata or {}).get("people") or {}) if seq is not None else {}).get(str(track_id)) or {}
    if entry.get("stature_source") != "given" or not isinstance(entry.get("scale"), (int, float)):
        return ""
    return f"scaled \u00d7{entry['scale']:.2f}"


def describe_heights(heights: Heights | None) -> str:
    """The Export dialog's line about the heights: "" when none are given."""
    if not heights:
        return ""
    given = [f"#{t} {h:.2f} m" for t, h in sorted(heights.per_track.items())]
    if heights.everyone is not None:
        given.append(f"everyone else {heights.everyone:.2f} m")
        return "Heights given: " + ", ".join(given) + "."
    return "Heights given: " + ", ".join(given) + "; the others as estimated."


def with_heights(base: PoseSequence, heights: Heights | None) -> tuple[PoseSequence, list[str]]:
    """A finished result (whole file, or a replayed finished recording) scaled to ``heights``
    (``apply_heights``, always from the result as processed, so clearing a height restores it); anything else
    (live poses, finished when exported) as it is."""
    if not heights or not is_finished(base):  # none given: the result as processed (its people estimated)
        return base, []
    return apply_heights(base, heights)


def typed_centimetres(text: str) -> float | None:
    """A whole number of centimetres a stature can be (``"172"`` -> 1.72 m), else None."""
    text = text.strip()
    if not text.isdigit():
        return None
    cm = int(text)
    return cm / 100 if round(MIN_HEIGHT_M * 100) <= cm <= round(MAX_HEIGHT_M * 100) else None


def could_be_centimetres(text: str) -> bool:
    """Whether more digits typed after ``text`` can make it a stature in centimetres (``"17"`` of ``"172"``)."""
    lo, hi = round(MIN_HEIGHT_M * 100), round(MAX_HEIGHT_M * 100)
    return text.isdigit() and any(str(cm).startswith(text) for cm in range(lo, hi + 1))


class HeightSpin(QDoubleSpinBox):
    """A height in metres, MIN_HEIGHT_M..MAX_HEIGHT_M, or "estimated" (its lowest value; an emptied field);
    stepping up from "estimated" starts at the person's read stature. A decimal comma is a point ("1,72" is
    1.72 m) and a whole number of centimetres is taken as such ("172" is 1.72 m, shown so); anything else out of
    range returns to the value before it, and ``refused`` says why."""

    refused = Signal(str)  # a message for the user: what was typed is no stature

    def __init__(self, start: float | None = None, parent: QWidget | None = None, empty: str = ESTIMATED):
        super().__init__(parent)
        self.setRange(NOT_GIVEN, MAX_HEIGHT_M)
        self.setDecimals(2)
        self.setSingleStep(0.01)
        self.setSuffix(" m")
        self.setSpecialValueText(empty)  # what an empty field reads: ESTIMATED, or MEASURED
        self.setKeyboardTracking(False)  # typing "1.6" applies on Enter / leaving the field, not at "1"
        self.setCorrectionMode(QDoubleSpinBox.CorrectionMode.CorrectToPreviousValue)
        self.setValue(NOT_GIVEN)
        self.start = start
        self.setToolTip(f"Standing height in metres ({MIN_HEIGHT_M:g}-{MAX_HEIGHT_M:g}, e.g. 1.72; 172 is read as "
                        "centimetres, 1,72 as 1.72); empty or stepped below the lowest: as the video reads them")

    def height(self) -> float | None:
        return field_height(self.value())

    def set_height(self, metres: float | None) -> None:
        """Show ``metres`` (clamped into the range; None: estimated)."""
        self.setValue(NOT_GIVEN if metres is None else max(MIN_HEIGHT_M, min(MAX_HEIGHT_M, float(metres))))

    def stepBy(self, steps: int) -> None:  # noqa: N802 - Qt override
        if steps > 0 and self.height() is None:
            start = self.start if self.start is not None and MIN_HEIGHT_M <= self.start <= MAX_HEIGHT_M else 1.70
            self.setValue(round(start, 2))
            return
        super().stepBy(steps)

    def validate(self, text: str, pos: int):
        bare = self._bare(text)
        if not bare:  # emptied: "estimated"
            return QValidator.State.Acceptable, text, pos
        text = text.replace(",", ".")  # a decimal comma
        if typed_centimetres(bare) is not None:
            return QValidator.State.Acceptable, text, pos
        state, text, pos = super().validate(text, pos)
        if state == QValidator.State.Invalid and could_be_centimetres(bare):
            return QValidator.State.Intermediate, text, pos
        return state, text, pos

    def valueFromText(self, text: str) -> float:  # noqa: N802 - Qt override
        bare = self._bare(text)
        if not bare or bare == self.specialValueText():
            return NOT_GIVEN
        cm = typed_centimetres(bare)
        return cm if cm is not None else super().valueFromText(text.replace(",", "."))

    def fixup(self, text: str) -> str:
        """Editing finished on what is no stature ("17", "0.3"): say so; the field returns to its value."""
        bare = self._bare(text)
        if bare and bare != self.specialValueText():
            self.refused.emit(f"{bare} is no standing height: type metres ({MIN_HEIGHT_M:g}-{MAX_HEIGHT_M:g}, "
                              "e.g. 1.72) or centimetres (172); the field kept its value")
        return text

    def _bare(self, text: str) -> str:
        text = text.strip()
        return text[: -len(self.suffix().strip())].strip() if text.endswith(self.suffix().strip()) else text


class HeightsPanel(QWidget):
    """One row per person (``set_people``); ``heights_changed(Heights)`` a moment after a field changes."""

    heights_changed = Signal(object)  # Heights
    invalid = Signal(str)  # a message for the user (never raised)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.people: list[PersonHeight] = []
        self.spins: dict[int, HeightSpin] = {}
        self.reads: dict[int, QLabel] = {}
        self.scales: dict[int, QLabel] = {}
        self.everyone: float | None = None  # a height given for everyone (command line): new rows start at it
        self._given: dict[int, float] = {}  # heights given, by id (kept for ids not listed now)
        self.note = QLabel(NOTE)
        self.note.setWordWrap(True)
        self.note.setObjectName("heights_note")
        self.empty = QLabel("No people tracked yet.")
        self.clear_button = QPushButton("Clear heights")  # each person as read: estimated, or measured
        self.clear_button.setToolTip("Forget every height given: each person as the video reads them")
        self.clear_button.clicked.connect(self.clear_heights)
        self.rows = QWidget()
        self.grid = QGridLayout(self.rows)
        self.grid.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(self.rows)
        side = QVBoxLayout()
        side.addWidget(self.note)
        side.addWidget(self.clear_button, 0, Qt.AlignmentFlag.AlignLeft)
        side.addStretch(1)
        body = QHBoxLayout(self)
        body.setContentsMargins(2, 2, 2, 2)
        left = QVBoxLayout()
        left.addWidget(self.empty)
        left.addWidget(scroll, 1)
        body.addLayout(left, 3)
        body.addLayout(side, 2)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(APPLY_DELAY_MS)
        self._timer.timeout.connect(self.emit_heights)
        self._rebuild()

    def set_people(self, people: list[PersonHeight]) -> None:
        """List ``people`` (kept fields keep their values; a row already there keeps its field)."""
        if people == self.people:
            return
        values = self.values()
        self.people = list(people)
        self._rebuild(values)

    def set_heights(self, heights: Heights) -> None:
        """Show ``heights`` in the fields (no signal): each listed person's, and ``everyone`` for later rows."""
        self.everyone = heights.everyone
        self._given = dict(heights.per_track)
        for tid, spin in self.spins.items():
            spin.blockSignals(True)
            spin.set_height(heights.of(tid))
            spin.blockSignals(False)

    def show_result(self, seq: PoseSequence | None) -> None:
        """Each row's last column from the result shown (``metadata["people"]``: the scale of a height given)."""
        for tid, label in self.scales.items():
            label.setText(scale_text(seq, tid))

    def values(self) -> dict[int, float | None]:
        """{track id: the field's metres, None: estimated}."""
        return {tid: spin.height() for tid, spin in self.spins.items()}

    def heights(self) -> Heights:
        """The fields as the library's Heights (ids no longer listed keep a height given to them)."""
        given = {**self._given, **self.values()}
        return heights_from_fields(given, self.everyone)

    def set_height(self, track_id: int, metres: float | None) -> None:
        """Enter ``metres`` in person ``track_id``'s field, as a user would (clamped; applied a moment later)."""
        self.spins[int(track_id)].set_height(metres)

    def clear_heights(self) -> None:
        self.everyone = None
        self._given = {}
        for spin in self.spins.values():
            spin.blockSignals(True)
            spin.set_height(None)
            spin.blockSignals(False)
        self.emit_heights()

    def emit_heights(self) -> None:
        self._timer.stop()
        try:
            heights = self.heights()
        except HeightError as exc:  # the fields clamp, so only a value set from elsewhere gets here
            self.invalid.emit(str(exc))
            return
        self._given = dict(heights.per_track)
        self.heights_changed.emit(heights)

    def _rebuild(self, values: dict[int, float | None] | None = None) -> None:
        values, given = values or {}, self._given
        while self.grid.count():
            item = self.grid.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        self.spins, self.reads, self.scales = {}, {}, {}
        for col, title in enumerate(("Person", "Video reads", "Height", "Result")):
            head = QLabel(f"<b>{title}</b>")
            self.grid.addWidget(head, 0, col)
        for row, person in enumerate(self.people, start=1):
            tid = person.track_id
            reads = QLabel(estimated_text(person))
            measured = person.source in ("multi-view", "floor")  # sized by the cameras, not estimated
            spin = HeightSpin(person.stature_m, empty=MEASURED if measured else ESTIMATED)
            spin.setObjectName(f"height_{tid}")
            start = values.get(tid, given.get(tid, self.everyone))
            spin.set_height(start)
            spin.valueChanged.connect(lambda _v: self._timer.start())
            spin.refused.connect(self.invalid)
            self.grid.addWidget(QLabel(f"#{tid}"), row, 0)
            self.grid.addWidget(reads, row, 1)
            self.grid.addWidget(spin, row, 2)
            scale = QLabel("")
            self.grid.addWidget(scale, row, 3)
            self.spins[tid], self.reads[tid], self.scales[tid] = spin, reads, scale
        self.grid.setRowStretch(len(self.people) + 1, 1)
        self.grid.setColumnStretch(4, 1)
        self.empty.setVisible(not self.people)
        self.clear_button.setEnabled(bool(self.people))

"""Export options: the choices of a format (``posetracker.export.choices``) as a small form, after the file name.

Built from the library's list (no export logic here): a check box for a yes / no choice, a combo box for
the others; a choice that needs another (the foot lock needs a fitted floor on the floor origin) is
greyed out while that one is set otherwise. :meth:`ExportOptionsDialog.options` gives the keywords for the
exporter's ``write`` (:func:`posetracker.export.choices.chosen_options`).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QVBoxLayout, QWidget

from posetracker.export.choices import chosen_options, export_choices


class ExportOptionsDialog(QDialog):
    """The choices of exporter ``name`` for a file ``target`` (shown, with ``contents``: which people and frames,
    :func:`posetracker.tracks.describe_contents`); OK keeps them."""

    def __init__(self, name: str, target: str, parent: QWidget | None = None, contents: str = ""):
        super().__init__(parent)
        self.name = name
        self.setWindowTitle(f"Export {name.upper()}: options")
        self.choices = export_choices(name)
        layout = QVBoxLayout(self)
        where = QLabel(f"Writing {target}" + (f"\n{contents}" if contents else ""))  # which people and frames
        where.setObjectName("export_contents")
        where.setWordWrap(True)
        layout.addWidget(where)
        form = QFormLayout()
        self.widgets: dict[str, QCheckBox | QComboBox] = {}
        for choice in self.choices:
            if choice.is_flag:
                box = QCheckBox(choice.label)
                box.setChecked(bool(choice.default))
                box.toggled.connect(self._update)
                form.addRow(box)
                widget: QCheckBox | QComboBox = box
            else:
                combo = QComboBox()
                for value, text in choice.values:
                    combo.addItem(text, value)
                combo.currentIndexChanged.connect(self._update)
                form.addRow(choice.label, combo)
                widget = combo
            widget.setToolTip(choice.help)
            widget.setObjectName(f"export_{choice.key}")
            self.widgets[choice.key] = widget
        layout.addLayout(form)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Export")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self._update()

    def chosen(self) -> dict[str, Any]:
        """{key: value} as the form shows it, greyed-out choices included."""
        out: dict[str, Any] = {}
        for key, widget in self.widgets.items():
            out[key] = widget.isChecked() if isinstance(widget, QCheckBox) else widget.currentData()
        return out

    def options(self) -> dict[str, Any]:
        """The keywords for the exporter's write(): the choices that apply."""
        return chosen_options(self.name, self.chosen())

    def set_choice(self, key: str, value: Any) -> None:
        """Set one choice's widget to ``value`` (a value the choice offers)."""
        widget = self.widgets[key]
        if isinstance(widget, QCheckBox):
            widget.setChecked(bool(value))
        else:
            index = widget.findData(value)
            if index < 0:
                raise ValueError(f"{key}: no value {value!r}")
            widget.setCurrentIndex(index)

    def _update(self, *_: object) -> None:
        chosen = self.chosen()
        for choice in self.choices:
            self.widgets[choice.key].setEnabled(choice.applies(chosen))

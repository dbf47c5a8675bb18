"""Connected cameras in File > Open several cameras (a mixin of :class:`ui.multicamera_dialog.MultiCameraDialog`;
it uses the dialog's ``table``, ``camera_menu``, ``cameras``, ``check``, ``views()``, ``refresh()``): the Add
camera menu, each camera's label, and with Live each view's camera of the calibration picked in the Camera column
(what ``posetracker process SRC1 SRC2 --mode live --cameras NAME ...`` takes; by default the CLI's rule, the
calibration's cameras in order for connected cameras).
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QComboBox

from posetracker.capture import CameraInfo
from posetracker.multiview.live_check import is_camera


class CameraViews:
    """The dialog's connected cameras and its picked calibrated cameras (``picked``: view -> camera name)."""

    picked: dict[str, str]  # set by the dialog: empty until the user picks a view's camera

    def _fill_camera_menu(self) -> None:
        """The Add camera menu: the connected cameras now (one not already a view), or why there is none."""
        self.camera_menu.clear()
        try:
            found = list(self.cameras())
        except Exception as exc:  # noqa: BLE001 - listing cameras must not break the dialog
            self.camera_menu.addAction(f"The cameras could not be listed: {exc}").setEnabled(False)
            return
        have = set(self.views())
        for cam in found:
            spec = f"camera:{cam.index}"
            action = self.camera_menu.addAction(f"{spec}  {cam.name}", lambda c=cam: self.add_camera(c.index, c.name))
            action.setEnabled(spec not in have)
        if not found:
            self.camera_menu.addAction("No camera found (is one connected?)").setEnabled(False)

    def _listed(self) -> list[CameraInfo]:
        try:
            return list(self.cameras())
        except Exception:  # noqa: BLE001 - a label only: the camera is shown as camera:N
            return []

    def add_camera(self, index: int, name: str = "") -> None:
        """Add connected camera ``index`` (``camera:N``; ``name`` its label) as a view: Live goes on and stays."""
        spec = f"camera:{int(index)}"
        self._labels[spec] = f"{spec} ({name})" if name else spec
        self._opened.pop(spec, None)  # added again: opened again
        self._append([spec])
        self.refresh()

    def cameras_chosen(self) -> bool:
        """Whether a connected camera is one of the views (Live is then on and locked)."""
        return any(map(is_camera, self.views()))

    def pick_cameras(self, names: list[str]) -> None:
        """Each view's calibrated camera, in order (``main.py --cameras``), then the set-up checked again."""
        self.picked = dict(zip(self.views(), names))
        self.refresh()

    def camera_names(self) -> list[str] | None:
        """Each view's calibrated camera as picked (``--cameras``), None until one is picked (the CLI's rule). A
        view added after a pick takes the first camera no other view has."""
        if not self.picked:
            return None
        views = self.views()
        used = {self.picked[v] for v in views if v in self.picked}
        free = [c for c in self.check.cameras if c not in used]
        return [self.picked[v] if v in self.picked else (free.pop(0) if free else "?") for v in views]

    def show_camera_pickers(self, live: bool) -> None:
        """Live: a picker of the calibration's cameras in each row's Camera cell; offline: the cell's text (each
        video's file name names its camera)."""
        for row, info in enumerate(self.check.views):
            if not (live and self.check.cameras):
                self.table.removeCellWidget(row, 1)
                continue
            box = QComboBox()
            box.addItems(self.check.cameras if info.camera else ["—", *self.check.cameras])
            box.setCurrentText(info.camera or "—")
            box.setToolTip("This view's camera in the calibration (process … --cameras NAME …)")
            box.activated.connect(lambda _i, b=box, v=info.path: self._pick_camera(v, b.currentText()))
            box.setEnabled(not self.running())
            self.table.setCellWidget(row, 1, box)

    def lock_camera_pickers(self, busy: bool) -> None:
        """No picking while a run holds the cameras."""
        for row in range(self.table.rowCount()):
            if (box := self.table.cellWidget(row, 1)) is not None:
                box.setEnabled(not busy)

    def _pick_camera(self, view: str, name: str) -> None:
        """``view`` takes calibrated camera ``name``; a view that had it takes ``view``'s former one (a swap), or the
        next camera no view has."""
        if self.running():
            return
        current = {i.path: i.camera for i in self.check.views if i.camera}
        current.update(self.picked)
        before = current.get(view)
        for other, cam in list(current.items()):
            if cam == name and other != view:  # the view that had it takes this one's, or the next free one
                if before:
                    current[other] = before
                else:
                    del current[other]
        current[view] = name
        self.picked = {v: c for v, c in current.items() if c and c != "—"}
        QTimer.singleShot(0, self.refresh)  # not inside the picker's own signal (refresh replaces it)

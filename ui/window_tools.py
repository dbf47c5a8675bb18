"""The window's Tools menu (a mixin of ``ui.main_window.MainWindow``): train an animal mode, batch-process videos,
calibrate cameras from a board. Each is a non-modal dialog made when first opened, one instance."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog

from .services import model_options


def _bring_up(dialog: QDialog) -> None:
    dialog.show()
    dialog.raise_()
    dialog.activateWindow()


class WindowTools:
    """Tools > … of :class:`ui.main_window.MainWindow`."""

    board_dialog = None  # Tools > Calibrate cameras from a board (ui.board_dialog.BoardDialog), made when first opened

    def ask_train_mode(self) -> None:
        """Tools > Train animal mode: the (non-modal) Train dialog; a mode it trains joins the skeleton selector."""
        from .train_dialog import TrainDialog

        if self.train_dialog is None:
            self.train_dialog = TrainDialog(self.services.train_mode, self)
            self.train_dialog.mode_trained.connect(lambda _result: self.refresh_model_options())
        _bring_up(self.train_dialog)

    def ask_batch(self) -> None:
        """Tools > Batch process videos: the (non-modal) Batch dialog, one instance, running Services.run_batch."""
        from .batch_dialog import BatchDialog, batch_skeletons

        if self.batch_dialog is None:
            skeletons = batch_skeletons(model_options(self.services.weights_path))
            self.batch_dialog = BatchDialog(self.services.run_batch, skeletons, self)
        _bring_up(self.batch_dialog)

    def ask_calibrate_board(self, clips: list[str] | None = None) -> None:
        """Tools > Calibrate cameras from a board: the Board dialog (``clips`` fill it); the calibration it saves
        can be used for the current source (``load_calibration``) or in Open several cameras."""
        from .board_dialog import BoardDialog

        if self.board_dialog is None:
            self.board_dialog = BoardDialog(self)
            self.board_dialog.use_for_source.connect(lambda path: self.load_calibration([path]))
            self.board_dialog.use_for_views.connect(lambda path: self.ask_open_views(calibration=path))
        if clips:
            self.board_dialog.set_clips(clips)
        _bring_up(self.board_dialog)

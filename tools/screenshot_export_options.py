"""Screenshot of the app's Export options form (BVH, floor=percentile: the foot lock greyed out).

    xvfb-run -a -s "-screen 0 1280x800x24" python tools/screenshot_export_options.py [OUT.png]

Default OUT: docs/screenshots/export-options-bvh.png. The real dialog (ui.export_dialog), grabbed alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs/screenshots/export-options-bvh.png"
    app = QApplication(sys.argv[:1])
    from ui.export_dialog import ExportOptionsDialog

    dialog = ExportOptionsDialog("bvh", "/home/me/gait/demo4_older_woman_walking.bvh")
    dialog.set_choice("floor", "percentile")
    dialog.show()
    dialog.adjustSize()

    def grab() -> None:
        dialog.grab().save(str(out))
        print(f"wrote {out}")
        app.quit()

    QTimer.singleShot(500, grab)
    app.exec()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

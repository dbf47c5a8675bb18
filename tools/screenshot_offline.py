"""Process a clip offline in the real app window, show it SECONDS into the clip and save the window (docs/screenshots).

    xvfb-run -a -s "-screen 0 1280x800x24" python tools/screenshot_offline.py CLIP SECONDS OUT.png [DOCK] [STATE]

DOCK: the title of a dock to bring to the front first (e.g. Gait, a tab beside Joint angles; "" for none).
STATE: JSON of app settings to start from (ui.state.AppState fields), e.g.
'{"skeleton": "mouse4", "refiners": ["heatmap", "graph"], "max_people": 1, "exact_count": true}'.
"""
import json, sys, tempfile
from pathlib import Path
from PySide6.QtCore import Qt, QTimer, QSettings
from PySide6.QtWidgets import QApplication
QApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
app = QApplication(sys.argv)
import torch; torch.set_num_threads(1)
from ui.main_window import MainWindow
src, seconds, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
settings = QSettings(str(Path(tempfile.mkdtemp()) / "s.ini"), QSettings.Format.IniFormat)
if len(sys.argv) > 5:
    settings.setValue("state", json.dumps(json.loads(sys.argv[5])))
w = MainWindow(settings=settings)
w.resize(1280, 800); w.show()
w.open_source(src, mode="offline")
state = {"seen": False}
def poll():
    if w.sequence is not None and not state["seen"]:
        state["seen"] = True
        QTimer.singleShot(int(seconds * 1000), lambda: (w.controller.pause(), QTimer.singleShot(1500, save)))
    elif not state["seen"]:
        QTimer.singleShot(500, poll)
def save():
    print("saved", w.save_screenshots(out)); app.quit()
if len(sys.argv) > 4 and sys.argv[4]:
    from PySide6.QtWidgets import QDockWidget
    dock = next(d for d in w.findChildren(QDockWidget) if d.windowTitle() == sys.argv[4])
    QTimer.singleShot(0, dock.raise_)
QTimer.singleShot(1000, poll)
app.exec()

"""The app's Heights panel (issue #48): a height entered for a person of a whole-file result scales that person
(the 3-D view's replay and every export, ``motion.heights.apply_heights``), the others stay as they were; the
field takes metres only (clamped; "estimated" when emptied)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PySide6.QtCore import Qt

from gui_helpers import (FakeSession, fake_services, isolated_settings, make_video, no_modal_dialogs,  # noqa: F401
                         open_window)
from posetracker.motion.heights import HeightError, Heights

pytestmark = [pytest.mark.gui, pytest.mark.qt_log_level_fail("WARNING"),
              pytest.mark.qt_log_ignore("propagateSizeHints")]


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("clip") / "clip.mp4", frames=30)


@pytest.fixture
def window(qtbot):
    services = fake_services()
    services.make_session = lambda choice: FakeSession(people=2)  # two people side by side
    w = open_window(qtbot, services)
    yield w
    w.close()
    assert not w.controller.running_threads()


def processed(qtbot, window, clip):
    window.open_source(str(clip), mode="offline")
    with qtbot.waitSignal(window.controller.processing_done, timeout=10000):
        pass
    qtbot.waitUntil(lambda: window.sequence is not None and window.model_ok, timeout=5000)
    return window.sequence


def world_of(seq, tid):
    return np.stack([f.world[list(f.track_ids).index(tid)] for f in seq.frames])


def test_people_and_fields_map_to_the_library_heights():
    from test_bvh_synthetic import make_sequence
    from ui.heights import (
        NOT_GIVEN, PersonHeight, describe_heights, estimated_text, field_height, heights_from_fields, people_of,
    )

    seq = make_sequence(5, people=2)
    assert people_of(seq) == [PersonHeight(0), PersonHeight(1)]  # not finished: ids only
    seq.metadata["people"] = {"0": {"stature_m": 1.684, "stature_source": "estimated"},
                              "1": {"stature_m": None, "stature_source": "unknown"}}
    rows = people_of(seq)
    assert rows == [PersonHeight(0, 1.684, "estimated"), PersonHeight(1, None, "unknown")]
    assert estimated_text(rows[0]) == "1.68 m" and "unknown" in estimated_text(rows[1])
    seq.metadata["people"]["0"]["stature_source"] = "multi-view"
    assert estimated_text(people_of(seq)[0]) == "1.68 m (several cameras)"
    assert people_of(None, [3, 1, 1, -1]) == [PersonHeight(1), PersonHeight(3)]
    assert field_height(NOT_GIVEN) is None and field_height(1.7) == 1.7
    assert heights_from_fields({0: 1.6, 1: None}) == Heights(None, {0: 1.6})
    with pytest.raises(HeightError, match="not 172 cm"):
        heights_from_fields({0: 172.0})
    assert describe_heights(Heights()) == ""
    assert describe_heights(Heights(None, {0: 1.6})) == "Heights given: #0 1.60 m; the others as estimated."


def test_the_height_field_clamps_and_takes_metres_only(qtbot):
    from ui.heights import ESTIMATED, HeightSpin

    spin = HeightSpin(start=1.68)
    qtbot.addWidget(spin)
    spin.show()
    assert spin.height() is None and spin.text() == ESTIMATED
    spin.set_height(5.0)
    assert spin.height() == 2.6  # clamped to the tallest stature
    spin.set_height(0.1)
    assert spin.height() == 0.4
    spin.set_height(None)
    spin.stepBy(1)  # stepping up from "estimated" starts at what the video reads
    assert spin.height() == 1.68
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), "172")  # centimetres: the field refuses the digits after "1"
    qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Return)
    assert spin.height() is None or 0.4 <= spin.height() <= 2.6
    assert spin.height() != 172
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), "1.55")
    qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Return)
    assert spin.height() == 1.55
    spin.lineEdit().selectAll()
    qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Delete)  # emptied: back to estimated
    qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Return)
    assert spin.height() is None


def test_a_height_for_person_0_scales_them_in_the_view_and_the_export(qtbot, window, clip, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog, QLabel

    from ui.export_dialog import ExportOptionsDialog

    before = processed(qtbot, window, clip)
    people = before.metadata["people"]
    assert set(people) == {"0", "1"} and people["0"]["stature_source"] == "estimated"
    panel = window.heights_panel
    assert sorted(panel.spins) == [0, 1] and all(v is None for v in panel.values().values())
    measured = people["0"]["stature_m"]
    assert f"{measured:.2f} m" == panel.reads[0].text()

    window.controller.pause()
    qtbot.waitUntil(lambda: not window.controller.snapshot().playing, timeout=3000)
    qtbot.wait(200)
    at = window.latest.pose.index
    with qtbot.waitSignal(panel.heights_changed, timeout=3000):
        panel.set_height(0, 1.5)  # entered in person 0's field
    assert window.heights == Heights(None, {0: 1.5})
    seq = window.sequence
    assert seq is not before and window.processed is before
    given = seq.metadata["people"]
    assert given["0"]["stature_source"] == "given" and given["0"]["stature_m"] == 1.5
    assert given["1"] == people["1"]
    scale_shown = f"scaled \u00d7{given['0']['scale']:.2f}"
    assert panel.scales[0].text() == scale_shown and panel.scales[1].text() == ""
    scale = given["0"]["scale"]
    assert scale == pytest.approx(1.5 / measured, rel=1e-3)
    np.testing.assert_allclose(world_of(seq, 0), world_of(before, 0) * scale, rtol=1e-3, atol=1e-5)
    np.testing.assert_array_equal(world_of(seq, 1), world_of(before, 1))
    # the 3-D view replays the scaled result, from the frame shown (paused: that frame again)
    qtbot.waitUntil(lambda: window.controller.inference is not None
                    and window.controller.inference.ready_flag and window.sequence is seq, timeout=5000)

    def shown_scaled():
        pose = window.latest.pose if window.latest is not None else None
        return pose is not None and np.allclose(pose.world[0], world_of(seq, 0)[pose.index], rtol=1e-5)

    qtbot.waitUntil(shown_scaled, timeout=5000)
    assert window.latest.pose.index == at

    # Export: the dialog says so, the file has it
    target = tmp_path / "people.json"
    shown = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(target), "")))

    def accept(dialog):
        shown.append(dialog.findChild(QLabel, "export_contents").text())
        return ExportOptionsDialog.DialogCode.Accepted

    monkeypatch.setattr(ExportOptionsDialog, "exec", accept)
    window.ask_export("trc")
    qtbot.waitUntil(lambda: not window._jobs, timeout=10000)
    assert "Heights given: #0 1.50 m; the others as estimated." in shown[0]
    window.export_to(target, "json")
    qtbot.waitUntil(lambda: not window._jobs, timeout=10000)
    written = json.loads(target.read_text())["metadata"]["people"]
    assert written["0"]["stature_source"] == "given" and written["0"]["stature_m"] == 1.5
    assert written["1"]["stature_source"] == "estimated" and written["1"]["stature_m"] == people["1"]["stature_m"]

    # back to estimated: the result as processed
    with qtbot.waitSignal(panel.heights_changed, timeout=3000):
        panel.clear_button.click()
    assert window.sequence is before and not window.heights


def test_a_height_out_of_range_set_from_elsewhere_is_a_message_not_a_traceback(qtbot, window):
    panel = window.heights_panel
    panel.everyone = 172.0  # no field would take it; a caller could
    panel.emit_heights()
    assert any("not 172 cm" in m for m in window.banner.messages())


def test_centimetres_and_a_decimal_comma_are_read_as_meant_and_other_typos_said(qtbot, window):
    """Typing 172 (cm) or 1,72 (a decimal comma) in a person's field gave 1.00 m, silently: the field refused the
    keys after "1". Now both are 1.72 m; what can be no stature ("17", "0.3") keeps the value, with a message."""
    from ui.heights import HeightsPanel, PersonHeight

    panel = HeightsPanel()
    qtbot.addWidget(panel)
    panel.invalid.connect(window.show_error)
    panel.set_people([PersonHeight(0, 1.68, "estimated")])
    spin = panel.spins[0]
    spin.show()
    assert "172 is read as centimetres" in spin.toolTip() and "not 172 cm" not in spin.toolTip()
    for typed in ("172", "1,72"):
        spin.set_height(None)
        spin.lineEdit().selectAll()
        qtbot.keyClicks(spin.lineEdit(), typed)
        qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Return)
        assert spin.height() == 1.72 and spin.text() == "1.72 m", typed
    for typed in ("17", "0.3"):
        spin.lineEdit().selectAll()
        qtbot.keyClicks(spin.lineEdit(), typed)
        qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Return)
        assert spin.height() == 1.72, typed  # kept, not clamped to 2.60 m or "estimated"
        assert any(m.startswith(f"{typed} is no standing height") for m in window.banner.messages()), typed


def test_people_sized_by_cameras_or_a_floor_read_measured_not_estimated(qtbot):
    """A person triangulated by several cameras (or sized by a calibrated floor) read "1.39 m (several cameras)"
    beside a height field reading "estimated", which invites a height that then rescales a measured person."""
    from ui.heights import ESTIMATED, MEASURED, HeightsPanel, PersonHeight

    panel = HeightsPanel()
    qtbot.addWidget(panel)
    panel.set_people([PersonHeight(0, 1.64, "multi-view"), PersonHeight(1, 1.37, "floor"),
                      PersonHeight(2, 1.70, "estimated")])
    assert [panel.spins[t].text() for t in (0, 1, 2)] == [MEASURED, MEASURED, ESTIMATED]
    assert panel.clear_button.text() == "Clear heights"  # was "All estimated"
    spin = panel.spins[0]
    spin.show()
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), "1.6")
    qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Return)
    assert spin.height() == 1.6
    spin.set_height(None)
    assert spin.text() == MEASURED and spin.height() is None


def test_live_poses_keep_their_size_and_their_export_is_finished_with_the_heights(qtbot, window, clip, tmp_path):
    window.state.loop = True
    window.open_source(str(clip))  # live
    qtbot.waitUntil(lambda: sorted(window.heights_panel.spins) == [0, 1], timeout=8000)  # the ids seen live
    assert window.processed is None and window.sequence is None
    with qtbot.waitSignal(window.heights_panel.heights_changed, timeout=3000):
        window.heights_panel.set_height(1, 1.4)
    assert window.heights == Heights(None, {1: 1.4}) and window.sequence is None
    target = tmp_path / "live.json"
    window.export_to(target, "json")
    qtbot.waitUntil(lambda: not window._jobs, timeout=20000)
    people = json.loads(target.read_text())["metadata"]["people"]
    assert people["1"]["stature_source"] == "given" and people["1"]["stature_m"] == 1.4
    assert people["0"]["stature_source"] == "estimated"


def test_the_command_line_takes_heights_in_metres_only(capsys):
    from ui.app import parse_args

    assert parse_args(["--height", "0=1.6"]).height == Heights(None, {0: 1.6})
    assert parse_args([]).height == Heights()
    with pytest.raises(SystemExit):
        parse_args(["--height", "172"])
    assert "not 172 cm" in capsys.readouterr().err

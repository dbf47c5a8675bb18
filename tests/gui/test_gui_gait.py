"""The Gait panel (offscreen): contact bands and heel strikes of a synthetic walker; its tab in the main window."""

from __future__ import annotations

import numpy as np
import pytest

from gait_synthetic import walker
from gui_helpers import fake_services, isolated_settings, make_video, no_modal_dialogs  # noqa: F401
from posetracker.analysis.foot_contact import CONTACT

pytestmark = [pytest.mark.gui, pytest.mark.qt_log_level_fail("WARNING"),
              pytest.mark.qt_log_ignore("propagateSizeHints")]


def fed_plot(qtbot, seq, seconds=6.0):
    from ui.gait_plots import GaitPlot

    plot = GaitPlot()
    qtbot.addWidget(plot)
    plot.set_spec(seq.skeleton)
    plot.set_window(seconds)
    for f in seq.frames:
        plot.add_pose(f)
    plot.show()  # a hidden panel does not analyse
    return plot


def test_contact_bands_and_heel_strikes_of_the_window(qtbot):
    w = walker(seconds=12.0, treadmill=True)
    plot = fed_plot(qtbot, w.seq)
    plot.refresh(0)
    gait = plot.gait
    assert gait is not None and gait.person_id == 0
    now = w.seq.frames[-1].timestamp
    assert gait.contacts.times[0] == pytest.approx(now - 6.0 - 4.0, abs=0.05)  # window + lead-in kept
    for f, foot in enumerate(("left", "right")):
        shown = [e for e in gait.heel_strikes(foot) if e.time >= now - 6.0]
        assert plot.strike_count(foot) == len(shown) >= 4
        contact_runs = np.diff(np.concatenate([[0], (gait.contacts.contact[:, f] == CONTACT).astype(int), [0]]))
        assert plot.band_count(foot) >= len(shown)
        assert plot.band_count(foot) <= (contact_runs == 1).sum()
        x, y = plot.strikes[foot].getData()
        assert (x <= 0).all() and (x >= -6.0).all()  # time before now
        assert np.allclose(y, [gait.knee[e.index, f] for e in shown])
    assert "cadence 110 steps/min" in plot.summary.text() and "stance" in plot.summary.text()


def test_a_hidden_panel_does_not_analyse_until_shown(qtbot, monkeypatch):
    import ui.gait_plots as gp

    w = walker(seconds=8.0)
    plot = fed_plot(qtbot, w.seq)
    plot.hide()
    calls = []
    real = gp.analyse_gait
    monkeypatch.setattr(gp, "analyse_gait", lambda *a, **k: calls.append(1) or real(*a, **k))
    plot.refresh(0)  # behind another tab: nothing
    assert calls == []
    plot.show()  # brought to front: the person it was last asked for
    assert len(calls) == 1 and plot.gait is not None and plot.gait.person_id == 0


def test_analysis_reruns_only_when_due(qtbot, monkeypatch):
    import ui.gait_plots as gp

    w = walker(seconds=8.0)
    plot = fed_plot(qtbot, w.seq)
    calls = []
    real = gp.analyse_gait
    monkeypatch.setattr(gp, "analyse_gait", lambda *a, **k: calls.append(1) or real(*a, **k))
    plot.refresh(0)
    plot.refresh(0)  # no new poses: drawn again, not analysed again
    assert len(calls) == 1
    plot.refresh(1)  # another person: analysed at once
    assert len(calls) == 2 and "no person with track id 1" in plot.summary.text()


def test_standing_still_and_nobody_show_no_strides(qtbot):
    plot = fed_plot(qtbot, walker(seconds=4.0, stand=True).seq)
    plot.refresh(0)
    assert plot.strike_count("left") == plot.strike_count("right") == 0
    assert plot.band_count("left") == 1 and "no full stride" in plot.summary.text()
    plot.refresh(None)
    assert plot.band_count("left") == 0 and plot.gait is None
    plot.clear()
    assert plot.summary.text() == "" and plot.band_count("right") == 0


def test_the_main_window_has_a_gait_tab_fed_with_the_poses(qtbot, tmp_path):
    from ui.main_window import MainWindow

    window = MainWindow(fake_services())
    qtbot.addWidget(window)
    window.show()
    try:
        assert window.gait_dock in window.tabifiedDockWidgets(window.plots_dock)
        assert window.gait_dock.toggleViewAction() in window.menuBar().actions()[-2].menu().actions()
        window.open_source(str(make_video(tmp_path / "clip.mp4", frames=30)))
        qtbot.waitUntil(lambda: window.poses_received >= 10, timeout=8000)
        assert window.gait_plots.isVisible()  # a tab behind the joint angles is not hidden, yet it is not analysed
        qtbot.wait(500)
        assert window.gait_plots.gait is None and window.gait_plots._analysed is None
        window.gait_dock.raise_()  # brought to front: analysed at once
        qtbot.waitUntil(lambda: window.gait_plots.gait is not None, timeout=3000)
        assert len(window.gait_plots._poses) >= 10
        assert window.gait_plots.summary.text().startswith("#0")
        window.plots.window_spin.setValue(4.0)
        assert window.gait_plots.seconds == 4.0
    finally:
        window.close()

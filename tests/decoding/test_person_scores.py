"""Person scores as probabilities (decoding.person_scores): the map, the skeleton key, the session's output."""

from dataclasses import replace

import numpy as np
import pytest

from posetracker.decoding.person_scores import calibrated
from posetracker.skeletons import SkeletonError, load_skeleton

from conftest import REPO


def test_the_map_is_monotone_and_optional():
    raw = np.array([0.0, 1e-5, 0.05, 0.1, 0.25, 0.41, 0.9], np.float32)
    np.testing.assert_array_equal(calibrated(raw, None), raw)
    p = calibrated(raw, (3.0, 4.0))
    assert p.dtype == np.float32 and ((p > 0) & (p < 1)).all()
    assert p[0] == p[1] and (np.diff(p[1:]) > 0).all()  # the floor, then strictly increasing: rankings kept
    np.testing.assert_allclose(p[5], 1 / (1 + np.exp(-(3.0 * np.log(0.41) + 4.0))), rtol=1e-6)


def test_human18_ships_a_calibration_that_lifts_clear_people(tmp_path):
    spec = load_skeleton("human18")
    assert spec.score_calibration is not None and load_skeleton("mouse4").score_calibration is None
    clear, faint = calibrated(np.array([0.51, 0.10]), spec.score_calibration)  # raw medians of real and false people
    assert clear > 0.7 and faint < 0.05
    base = (load_skeleton.__globals__["SKELETON_DIR"] / "human18.yaml").read_text().rsplit("score_calibration:", 1)[0]
    for bad in ("[1.0]", "[-1.0, 2.0]", "[.nan, 1.0]", "fast"):
        path = tmp_path / "h.yaml"
        path.write_text(base + f"score_calibration: {bad}\n")
        with pytest.raises(SkeletonError, match="score_calibration"):
            load_skeleton(path)


def test_session_outputs_calibrated_scores_and_the_same_people():
    from posetracker.capture import VideoFileSource
    from posetracker.session import RefineSettings, SessionConfig, TrackingSession

    session = TrackingSession.open(config=SessionConfig(mode="offline", refine=RefineSettings(refiners=())))
    with VideoFileSource(str(REPO / "assets" / "sample_dance.mp4")) as src:
        rgb = next(iter(src)).image
    out = session.process_image(rgb)
    session.spec = replace(session.spec, score_calibration=None)
    raw = session.process_image(rgb)
    assert out.num_people == raw.num_people >= 1
    np.testing.assert_array_equal(out.keypoints, raw.keypoints)
    np.testing.assert_allclose(out.scores, calibrated(raw.scores, load_skeleton("human18").score_calibration),
                               rtol=1e-6)
    assert (out.scores > raw.scores).all()  # the dancer is clearly visible


def test_the_calibration_is_remade_by_one_command(capsys):
    """``posetracker train score-calibration`` (issue #51: recipes are CLI verbs): each set left out of its own fit,
    then the fit on every set in the form human18.yaml takes."""
    from conftest import shared_path

    from posetracker.cli import main

    sets = [str(shared_path("data", "human", n, "normalized.json")) for n in ("mmpose_mpii", "mmpose_aic")]
    assert main(["train", "score-calibration", "--data", *sets]) == 0
    out = capsys.readouterr().out
    assert "mmpose_mpii | 5 / " in out and "each set left out of its own fit" in out
    assert "fit on every set: score_calibration: [" in out
    assert main(["train", "score-calibration", "--data", sets[0]]) == 2  # one set cannot be left out

"""The real projects under ../shared imported, trained and used end to end (slow: a few minutes each):
DeepLabCut's open-field mouse project folder and SLEAP's centred-pair predictions (``.slp``)."""

from __future__ import annotations

import pytest
import yaml

from conftest import shared_path

from posetracker.evaluation.datasets import load_labelled_set, read_image
from posetracker.session import RefineSettings, SessionConfig, TrackingSession
from posetracker.skeletons import load_skeleton
from posetracker.train.user_mode import create_user_mode, user_modes

pytestmark = [pytest.mark.slow, pytest.mark.shared]


def _short(train_yaml) -> None:
    cfg = yaml.safe_load(train_yaml.read_text())
    cfg["augment"] = {**cfg["augment"], "variants": 1}
    train_yaml.write_text(yaml.safe_dump(cfg, sort_keys=False))


@pytest.mark.parametrize("project, predicted", [
    (("animal", "dlc_openfield_mouse"), False),
    (("animal", "video_sleap_flies_centered_pair", "centered_pair_predictions.slp"), True),
])
def test_a_real_project_becomes_a_mode(tmp_path, monkeypatch, project, predicted):
    monkeypatch.setenv("POSETRACKER_MODES", str(tmp_path / "modes"))
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    result = create_user_mode(shared_path("data", *project), "real", steps=40, include_predicted=predicted,
                              config=_short)
    assert len(result.history) == 40 and result.report["held_out_items"] >= 1
    assert result.history[-1]["loss"] < result.history[0]["loss"]  # it learnt something in 40 steps
    (mode,) = user_modes()
    spec = load_skeleton(mode.skeleton)
    session = TrackingSession.open(str(mode.skeleton), mode.weights, SessionConfig(refine=RefineSettings(refiners=())))
    item = load_labelled_set(mode.folder / "training" / "normalized.json").items[-1]  # a held-out frame
    frame = session.process_image(read_image(item))
    assert frame.keypoints.shape[1:] == (spec.num_joints, 3)

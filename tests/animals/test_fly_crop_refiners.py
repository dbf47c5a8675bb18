"""A top-down mode's maps- and people-stage refiners (methods B and C) run on its crop model's maps
(``second_look.CropModel.refiners``, handed over by ``second_look.crop_refiners``; studies/fly13.md, "The crop
model's refiners")."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import shared_path


def _shift_refiner(spec):
    """A refiner that records the maps and image it is given and moves every joint by +3 px (not registered)."""
    from posetracker.refiners import Refiner

    class Shift(Refiner):
        kind = "shift-test"

        def __init__(self, spec):
            super().__init__(spec)
            self.seen: list[tuple] = []

        def refine_maps(self, maps, image):
            self.seen.append(("maps", tuple(maps["heatmap_logits"].shape), None if image is None else tuple(image.shape)))
            return maps

        def refine_people(self, people, maps, stride):
            from dataclasses import replace

            self.seen.append(("people", tuple(maps["heatmap_logits"].shape), stride))
            return replace(people, keypoints=people.keypoints + 3.0)

    return Shift(spec)


@pytest.fixture(scope="module")
def fly_crop():
    """(spec, the shipped crop model in torch, one (1, 256, 256, 3) crop around a held-out fly's thorax)."""
    from posetracker.decoding.top_down import crop_affine, crop_window, upright_turn, warp_crop
    from posetracker.evaluation.datasets import item_points, read_image
    from posetracker.model.weights import load_posenet
    from posetracker.session import NetworkSettings, SessionConfig, TrackingSession
    from posetracker.skeletons import load_skeleton
    from posetracker.train.detector_samples import load_split

    data = shared_path("data", "animal", "sleap_flies_clip_train", "normalized.json")
    spec = load_skeleton("fly13")
    _, held_out, cols = load_split(str(data), spec, 0.2)
    session = TrackingSession(load_posenet(None, spec), SessionConfig(mode="offline", network=NetworkSettings(runtime="torch")))
    item = held_out[0]
    fly = item_points(item, cols)[0]  # cut as the product cuts it: upright by its head-abdomen line (align)
    affine = crop_affine(crop_window(fly[spec.root], 256.0), 256, upright_turn(fly, spec.crop_align))
    crop = warp_crop(read_image(item), affine, 256)[None]
    return spec, session, crop


def test_crop_model_runs_its_refiners_on_the_crops_maps(fly_crop):
    from posetracker.refiners import RefinerChain, build_refiner
    from posetracker.second_look import load_crop_model

    spec, session, crop = fly_crop
    model = load_crop_model(spec, None, session.decoder, session.sigmas)  # torch, not accelerated
    plain = model(crop)[0]
    assert plain.num_people >= 1
    model.refiners = RefinerChain([build_refiner("heatmap", spec), build_refiner("graph", spec)])  # untrained: identity
    same = model(crop)[0]
    np.testing.assert_allclose(same.keypoints, plain.keypoints, atol=1e-3)
    shift = _shift_refiner(spec)
    model.refiners = RefinerChain([shift])
    moved = model(crop)[0]
    np.testing.assert_allclose(moved.keypoints, plain.keypoints + 3.0, atol=1e-3)
    k = spec.num_joints
    assert shift.seen == [("maps", (1, k, 64, 64), (1, 3, 256, 256)), ("people", (1, k, 64, 64), 4)]


def test_a_top_down_session_runs_its_refiners_on_the_crop_model(tmp_path):
    """Refiners chosen for fly13 (read beside the weights) go to the crop model, none stays on the centre model."""
    from posetracker.model.weights import MODELS_DIR, load_posenet
    from posetracker.refiners import build_refiner, save_refiner
    from posetracker.session import NetworkSettings, RefineSettings, SessionConfig, TrackingSession
    from posetracker.skeletons import load_skeleton

    spec = load_skeleton("fly13")
    for name in ("posenet-fly13.safetensors", "posenet-fly13-crops.safetensors"):
        (tmp_path / name).symlink_to(MODELS_DIR / name)
    for kind in ("heatmap", "graph"):
        save_refiner(build_refiner(kind, spec), tmp_path / f"refiner-{kind}-fly13.safetensors", {})
    session = TrackingSession(load_posenet(tmp_path / "posenet-fly13.safetensors", spec),
                              SessionConfig(mode="offline", network=NetworkSettings(runtime="torch"),
                                            refine=RefineSettings(refiners=("graph", "heatmap"))), tmp_path)
    assert session.crop_model.refiners.names == ["heatmap", "graph"] and not session.refiners


def test_fly13_default_refiners_are_the_cards():
    """models/refiners-and-animals.md: fly13 ships both refiners of its crop model and runs the heatmap refiner
    offline (walking flies -0.41 px, frames 800-999 no worse), none live (studies/fly13.md, "Upright crops")."""
    from pathlib import Path

    from posetracker.refiners import available_refiners, default_refiners

    assert available_refiners("fly13") == ["graph", "heatmap"]
    assert default_refiners("fly13", "offline") == ("heatmap",) and default_refiners("fly13", "live") == ()
    card = (Path(__file__).resolve().parents[2] / "models" / "refiners-and-animals.md").read_text()
    assert "**fly13 runs its heatmap refiner offline**" in card

"""The properties of method A that the design rests on (``../shared/design/methods.md``), pinned.

- The tree walk from the *located* parent: moving a parent moves its child's prediction.
- The bidirectional temporal stage: a later frame changes an earlier frame's offline output, and so does
  live look-ahead 1; live look-ahead 0 never sees the future.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posetracker.decoding import TreeDecoder
from posetracker.decoding.synthetic import ideal_outputs, make_person
from posetracker.model.network import CausalStream
from posetracker.model.weights import load_posenet
from posetracker.session import NetworkSettings, PeopleSettings, SessionConfig, TrackingSession
from posetracker.skeletons import load_skeleton
from posetracker.types import Frame


def _gaussian(h: int, w: int, x: float, y: float, sigma: float = 1.0) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    return np.exp(-((xx - x) ** 2 + (yy - y) ** 2) / (2 * sigma**2)).astype(np.float32)


def _walk_with_moved_elbow(shift: tuple[int, int], decoy: float = 0.0
                           ) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    """Decode one ideal person whose left-elbow peak is moved by ``shift`` cells. ``decoy`` > 0: a second
    left-wrist peak of that height where the moved elbow's step points (a neighbour's wrist).
    -> ((K, 2) predicted px, (K, 2) located px, (wrist, elbow) indices)."""
    spec = load_skeleton("human18")
    stride = 4
    person = make_person(spec, (128, 120), 170)
    out = ideal_outputs(person[None], spec, stride=stride)
    elbow, wrist = spec.index("left_elbow"), spec.index("left_wrist")
    h, w = out["heatmaps"].shape[1:]
    ex, ey = np.round(person[elbow] / stride).astype(int) + np.asarray(shift)
    out["heatmaps"][elbow] = _gaussian(h, w, ex, ey)
    out["offsets"][2 * elbow : 2 * elbow + 2] = 0.0
    if decoy:
        wx, wy = np.round(person[wrist] / stride).astype(int) + np.asarray(shift)
        out["heatmaps"][wrist] = np.maximum(out["heatmaps"][wrist], decoy * _gaussian(h, w, wx, wy))
        out["offsets"][2 * wrist : 2 * wrist + 2] = 0.0
    dec = TreeDecoder(spec, stride=stride).decode(out)
    assert dec.num_people == 1
    return dec.predicted[0], dec.keypoints[0], (wrist, elbow)


def test_the_walk_predicts_a_child_from_its_located_parent():
    """The child is predicted from where its parent was found."""
    still, found, (wrist, elbow) = _walk_with_moved_elbow((0, 0))
    moved, found_moved, _ = _walk_with_moved_elbow((3, 2))
    np.testing.assert_allclose(found_moved[elbow] - found[elbow], [12, 8], atol=0.5)  # the elbow was found moved
    np.testing.assert_allclose(moved[wrist] - still[wrist], [12, 8], atol=0.5)  # and its child followed


def test_a_parent_found_astray_does_not_drag_its_child_along():
    """Step 8, "its own centre/parent": a walk whose elbow took a peak far from the arm still finds the wrist, whose
    peak matches the centre read's prediction; the prediction itself stays the walk's."""
    still, found, (wrist, elbow) = _walk_with_moved_elbow((0, 0))
    moved, found_moved, _ = _walk_with_moved_elbow((3, 2), decoy=0.8)
    np.testing.assert_allclose(found_moved[elbow] - found[elbow], [12, 8], atol=0.5)  # the elbow went astray
    np.testing.assert_allclose(moved[wrist] - still[wrist], [12, 8], atol=0.5)  # the walk predicts from it
    np.testing.assert_allclose(found_moved[wrist], found[wrist], atol=2.0)  # found where it is (the decoy: 14 px off)


@pytest.fixture(scope="module")
def net():
    torch.manual_seed(0)
    return load_posenet().eval()  # the shipped weights (their temporal stage is trained)


def _frames(changed_last: bool, n: int = 4) -> torch.Tensor:
    """(1, n, 3, 64, 64) frames; the last one differs between the two variants."""
    g = torch.Generator().manual_seed(1)
    x = torch.rand(1, n, 3, 64, 64, generator=g) * 255
    if changed_last:
        x[:, -1] = 255 - x[:, -1]
    return x


def _stream(net, frames: torch.Tensor, lookahead: int) -> list[torch.Tensor]:
    stream = CausalStream(net, lookahead)
    outs = [o for t in range(frames.shape[1]) if (o := stream.push(frames[:, t])) is not None]
    return [o["heatmap_logits"][:, 0] for o in outs + stream.flush()]


def test_a_future_frame_changes_the_offline_result(net):
    with torch.no_grad():
        a = net(_frames(False))["heatmap_logits"]
        b = net(_frames(True))["heatmap_logits"]
    assert not torch.equal(a[:, -2], b[:, -2])  # frame t sees frame t + 1 through the backward GRU
    assert (a[:, -2] - b[:, -2]).abs().max() > 1e-3


def test_live_lookahead_one_sees_one_frame_ahead_and_zero_sees_none(net):
    a1, b1 = _stream(net, _frames(False), 1), _stream(net, _frames(True), 1)
    assert not torch.equal(a1[-2], b1[-2])
    a0, b0 = _stream(net, _frames(False), 0), _stream(net, _frames(True), 0)
    for t in range(len(a0) - 1):
        assert torch.equal(a0[t], b0[t]), f"frame {t} changed with a later frame at look-ahead 0"


def test_a_live_session_at_lookahead_zero_never_sees_the_future(net):
    """The whole product path (letterbox, network, decoding, tracking, smoothing) at look-ahead 0."""
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (96, 128, 3), dtype=np.uint8) for _ in range(4)]

    def run(last: np.ndarray) -> list:
        session = TrackingSession(net, SessionConfig(mode="live", network=NetworkSettings(lookahead=0),
                                                     people=PeopleSettings(score_threshold=0.0,
                                                                           min_person_probability=0.0)))
        poses = [session.step(Frame(i, i / 30, img)) for i, img in enumerate(images[:-1] + [last])]
        return poses[:-1]

    a, b = run(images[-1]), run(255 - images[-1])
    assert sum(p.num_people for p in a) > 0  # something to compare
    for pa, pb in zip(a, b):
        np.testing.assert_array_equal(pa.keypoints, pb.keypoints)
        np.testing.assert_array_equal(pa.track_ids, pb.track_ids)

"""TrackingSession end to end on a generated clip (shipped weights, no ../shared needed)."""

import numpy as np
import pytest
import torch

from posetracker.model.network import PoseNet
from posetracker.refiners import default_refiners
from posetracker.session import NetworkSettings, SessionConfig, TrackingSession
from posetracker.types import Frame


def _frames(n=6, size=(96, 128)):
    rng = np.random.default_rng(0)
    for i in range(n):
        yield Frame(i, i / 30.0, rng.integers(0, 255, (*size, 3), dtype=np.uint8))


@pytest.fixture(scope="module")
def tiny_net(human18):
    torch.manual_seed(0)
    return PoseNet(human18).eval()


@pytest.mark.parametrize("mode", ["live", "offline"])
def test_every_frame_comes_out_once_in_order(tiny_net, mode):
    session = TrackingSession(tiny_net, SessionConfig(mode=mode,
                                                      network=NetworkSettings(chunk=4, overlap=2, lookahead=1)))
    seq = session.run(_frames(7), fps=30.0, total=7)
    assert [f.index for f in seq.frames] == list(range(7))
    ts = [f.timestamp for f in seq.frames]
    assert ts == sorted(ts)
    for f in seq.frames:
        assert f.image_size == (128, 96)
        assert not np.isnan(f.keypoints[..., :2]).any()


def test_live_step_lookahead_delays_output(tiny_net):
    session = TrackingSession(tiny_net, SessionConfig(mode="live", network=NetworkSettings(lookahead=2)))
    frames = list(_frames(4))
    assert session.step(frames[0]) is None and session.step(frames[1]) is None
    assert session.step(frames[2]).index == 0
    assert [p.index for p in session.flush()] == [1, 2]
    session.reset()
    outs = [session.step(f) for f in frames]
    rest = session.flush()
    assert [o.index for o in outs if o is not None] + [r.index for r in rest] == [0, 1, 2, 3]


def test_cancel_stops_early(tiny_net):
    calls = []
    session = TrackingSession(tiny_net, SessionConfig(mode="offline", network=NetworkSettings(chunk=2, overlap=1)))
    seq = session.run(_frames(10), fps=30.0, cancel=lambda: len(calls) >= 3, progress=lambda d, t: calls.append(d))
    assert len(seq) == 3


def test_real_model_finds_the_dancer_in_the_sample_clip(shipped_net):
    from conftest import REPO
    from posetracker.capture import VideoFileSource

    session = TrackingSession(shipped_net, SessionConfig(mode="live"))
    with VideoFileSource(REPO / "assets" / "sample_dance.mp4") as src:
        frames = [src.read() for _ in range(12)]
    poses = [session.step(f) for f in frames]
    last = poses[-1]
    assert last.num_people == 1, "one dancer"
    assert last.track_ids[0] == 0, "confirmed as track 0 after a few frames"
    xy = last.keypoints[0, :17, :2]
    # The dancer stands in the middle third of the 576x576 frame, head above hips above ankles.
    assert 150 < np.median(xy[:, 0]) < 420
    nose, hip, ankle = xy[0, 1], xy[11, 1], xy[15, 1]
    assert nose < hip < ankle
    assert np.all(np.isfinite(last.world)) and 1.0 < last.world[0, 17, 2] < 10.0


def test_run_leaves_out_people_never_confirmed_unless_asked(shipped_net):
    """A detection that never became a track (id -1 after back-filling) is not written by default."""
    import dataclasses

    from conftest import REPO
    from posetracker.capture import open_source
    from posetracker.session import NetworkSettings, PeopleSettings, RefineSettings, SessionConfig, TrackingSession

    net = shipped_net
    for keep in (False, True):
        # no refiner: the ghost below is added after the precision stage would have run
        session = TrackingSession(net, SessionConfig(mode="live", network=NetworkSettings(lookahead=0),
                                                     people=PeopleSettings(keep_unconfirmed=keep),
                                                     refine=RefineSettings(refiners=())))
        real = session._people

        def with_ghost(out, meta, budget_ms=None, real=real):
            """The dancer, plus at frame 5 a copy of her 300 px to the right, seen once."""
            pose = real(out, meta, budget_ms)
            if meta.index != 5 or pose.num_people == 0:
                return pose
            ghost = pose.keypoints.copy()
            ghost[:, :, 0] += 300.0
            return dataclasses.replace(
                pose, keypoints=np.concatenate([pose.keypoints, ghost]),
                confidence=np.concatenate([pose.confidence] * 2), scores=np.concatenate([pose.scores] * 2),
                track_ids=np.full(2 * pose.num_people, -1, np.int64),
                world=None if pose.world is None else np.concatenate([pose.world] * 2))

        session._people = with_ghost
        with open_source(str(REPO / "assets" / "sample_dance.mp4")) as src:
            seq = session.run((f for _, f in zip(range(12), src)), fps=30.0)
        assert (-1 in [int(i) for f in seq.frames for i in f.track_ids]) == keep
        assert seq.frames[5].num_people == (2 if keep else 1)


def test_aspect_fitted_letterbox_maps_back_to_the_source():
    """fit: the canvas follows the frame's aspect (sides multiples of 32), pixels map back as with the square."""
    from posetracker.model.preprocess import fitted_shape, letterbox

    assert fitted_shape(1280, 720) == (160, 256) and fitted_shape(720, 1280) == (256, 160)
    assert fitted_shape(576, 576) == (256, 256) and fitted_shape(640, 480) == (192, 256)
    rgb = np.zeros((720, 1280, 3), np.uint8)
    rgb[300:340, 600:680] = 255
    img, box = letterbox(rgb, 256, fit=True)
    square, box_sq = letterbox(rgb, 256)
    assert img.shape == (160, 256, 3) and box.input_shape == (160, 256) and square.shape == (256, 256, 3)
    assert np.array_equal(img, square[:160]) and box.scale == box_sq.scale
    ys, xs = np.nonzero(img[..., 0] > 127)
    centre = box.to_source(np.array([xs.mean() + 0.5, ys.mean() + 0.5]))
    np.testing.assert_allclose(centre, [640, 320], atol=2.0)


def test_reset_keeping_ids_hands_out_new_ones():
    """After a seek the tracker starts afresh, but no id names two people within one recording."""
    from posetracker.capture import open_source
    from posetracker.resources import sample_clip
    from posetracker.session import NetworkSettings, SessionConfig, TrackingSession

    with open_source(str(sample_clip())) as src:
        frames = [f for _, f in zip(range(12), src)]
    session = TrackingSession.open(config=SessionConfig(mode="live", network=NetworkSettings(lookahead=0)))
    first = {int(i) for f in frames for i in session.step(f).track_ids}
    session.reset(keep_ids=True)
    again = {int(i) for f in frames for i in session.step(f).track_ids}
    session.reset()
    afresh = {int(i) for f in frames for i in session.step(f).track_ids}
    assert first - {-1} == {0} and min(again - {-1}) > max(first) and afresh - {-1} == {0}


def test_a_model_away_from_its_refiners_says_it_runs_without_them(tmp_path):
    """Weights copied out of models/ leave the offline precision stage behind: the session says so (the CLI
    prints its notices), instead of quietly measuring something else; beside them it is used, silently."""
    import shutil

    from posetracker.refiners import available_refiners
    from posetracker.session import SessionConfig, TrackingSession
    from posetracker.weights_file import MODELS_DIR

    if "crop" not in available_refiners("human18"):
        pytest.skip("no shipped crop refiner")
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy2(MODELS_DIR / "posenet-human18.safetensors", alone / "posenet-human18.safetensors")
    session = TrackingSession.open(weights=alone / "posenet-human18.safetensors", config=SessionConfig(mode="offline"))
    assert not session.refiners and any("without its default refiner(s) crop" in n for n in session.notices)
    shipped = TrackingSession.open(config=SessionConfig(mode="offline"))
    assert shipped.refiners and not any("default refiner" in n for n in shipped.notices)
    live = TrackingSession.open(weights=alone / "posenet-human18.safetensors", config=SessionConfig(mode="live"))
    assert not live.refiners  # live's fast stage (two CPUs) is not there either, and it says so where it has one
    assert any("without its default refiner(s) crop-fast" in n for n in live.notices) == bool(
        default_refiners("human18", "live"))


def test_live_frames_pass_the_facing_stage_unless_turned_off(tiny_net):
    """Live, every tracked frame goes through the facing of people seen from behind (motion.live_sides) on its way
    to the smoothing, so the CLI, the app and batch runs all get it; fix_facing=False (--no-facing-repair) leaves
    it out."""
    from posetracker.session import MotionSettings

    for fix in (True, False):
        session = TrackingSession(tiny_net, SessionConfig(mode="live", network=NetworkSettings(lookahead=1),
                                                          motion=MotionSettings(fix_facing=fix)))
        passed = []
        real = session.sides.update
        session.sides.update = lambda pose, real=real: passed.append(pose.index) or real(pose)
        outs = [session.step(f) for f in _frames(5)] + session.flush()
        assert [o.index for o in outs if o is not None] == list(range(5))
        assert passed == (list(range(5)) if fix else [])

"""Decoding (method A steps 4-9): encode known poses, decode them back (circular tests).

Single people, animals, the walk against MoveNet's centre read, empty frames, the peak
finder, the target encoder and the camera lift (``posetracker.depth``). Multi-person scenes are in
test_decoding_multi.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from posetracker.decoding import (
    TreeDecoder,
    assign_greedy,
    assign_hungarian,
    encode_targets,
    fill_virtual_joints,
    find_peaks,
    local_maxima,
    path_matrix,
    refine_quadratic,
    sample_bilinear,
)
from posetracker.decoding.peaks import maxima_above
from posetracker.decoding.synthetic import ideal_outputs, make_person
from posetracker.depth import Camera, joint_depths, lift_keypoints
from posetracker.skeletons import load_skeleton
from posetracker.types import ShapeError

PX_TOL = 0.5  # input pixels
Z_TOL = 1e-3  # metres


@pytest.fixture(scope="module")
def human():
    return load_skeleton("human18")


def person_depth(spec, people: np.ndarray, root_z: list[float], seed: int = 0) -> np.ndarray:
    """(P, K) depths: a root depth per person plus +-0.25 m per joint; virtual joints nan."""
    rng = np.random.default_rng(seed)
    z = np.asarray(root_z)[:, None] + rng.uniform(-0.25, 0.25, people.shape[:2])
    for j in spec.virtual:
        z[:, j] = np.nan
    return z


def match(decoded_xy: np.ndarray, truth_xy: np.ndarray, root: int) -> np.ndarray:
    """Index of the decoded person for every true person (nearest root, one-to-one)."""
    d = np.linalg.norm(truth_xy[:, None, root] - decoded_xy[None, :, root], axis=-1)
    idx = d.argmin(axis=1)
    assert len(set(idx.tolist())) == len(idx), "two true people matched one decoded person"
    return idx


def round_trip(spec, people, depth=None, visible=None, **decoder_kw):
    """Encode, decode, and return (decoded, true xy, true depth, matching)."""
    out = ideal_outputs(people, spec, visible=visible, depth=depth)
    dec = TreeDecoder(spec, **decoder_kw).decode(out)
    truth, z = fill_virtual_joints(people, spec, visible, depth)
    assert dec.num_people == len(people)
    return dec, truth, z, match(dec.keypoints, truth, spec.root)


@pytest.mark.parametrize("height", [60.0, 130.0, 220.0])
def test_single_person_round_trip(human, height):
    people = make_person(human, (127.3, 129.1), height, angle_deg=7.0)[None]
    depth = person_depth(human, people, [3.2])
    dec, truth, z, idx = round_trip(human, people, depth)
    np.testing.assert_allclose(dec.keypoints[idx], truth, atol=PX_TOL)
    np.testing.assert_allclose(joint_depths(dec.depth_reads, path_matrix(human))[idx], z, atol=Z_TOL)
    np.testing.assert_allclose(dec.predicted[idx], truth, atol=PX_TOL)  # ideal vectors predict exactly
    assert dec.confidence.min() > 0.5
    assert dec.keypoints.dtype == np.float32 and dec.keypoints.shape == (1, 18, 2)


def test_round_trip_without_depth_or_offsets(human):
    people = make_person(human, (120.0, 126.0), 180.0)[None]
    out = ideal_outputs(people, human)
    truth, _ = fill_virtual_joints(people, human)
    dec = TreeDecoder(human).decode(out)
    assert np.isnan(dec.depth_reads).all()
    np.testing.assert_allclose(dec.keypoints[0], truth[0], atol=PX_TOL)
    # Without the offset head, peaks are refined from the heatmap's shape (exact for a Gaussian).
    del out["offsets"]
    dec = TreeDecoder(human).decode(out)
    np.testing.assert_allclose(dec.keypoints[0], truth[0], atol=PX_TOL)


@pytest.mark.parametrize("name", ["mouse4", "fly13"])
def test_animals_round_trip(name):
    spec = load_skeleton(name)
    people = np.stack([
        make_person(spec, (70.2, 80.5), 90.0, angle_deg=20.0),
        make_person(spec, (180.6, 150.3), 110.0, angle_deg=-35.0),
        make_person(spec, (90.1, 200.7), 70.0, angle_deg=95.0),
    ])
    depth = person_depth(spec, people, [0.5, 0.6, 0.55], seed=3)
    dec, truth, z, idx = round_trip(spec, people, depth)
    np.testing.assert_allclose(dec.keypoints[idx], truth, atol=PX_TOL)
    np.testing.assert_allclose(joint_depths(dec.depth_reads, path_matrix(spec))[idx], z, atol=Z_TOL)


def test_empty_heatmaps_give_no_people(human):
    h = w = 64
    k, e = human.num_joints, human.num_edges
    out = {"heatmaps": np.zeros((k, h, w), np.float32), "vectors": np.zeros((2 * e, h, w), np.float32),
           "offsets": np.zeros((2 * k, h, w), np.float32), "depth": np.zeros((1 + e, h, w), np.float32)}
    dec = TreeDecoder(human).decode(out)
    assert dec.num_people == 0
    assert dec.keypoints.shape == (0, k, 2) and dec.confidence.shape == (0, k) and dec.depth_reads.shape == (0, 1 + e)
    # No labelled people encode to empty maps as well.
    targets = encode_targets(np.zeros((0, k, 2)), human)
    assert TreeDecoder(human).decode({n: targets[n] for n in ("heatmaps", "vectors")}).num_people == 0


def test_missing_joint_keeps_prediction_with_low_confidence(human):
    people = make_person(human, (128.0, 128.0), 170.0)[None]
    visible = np.ones((1, 18), bool)
    wrist, knee = human.index("left_wrist"), human.index("right_knee")
    visible[0, [wrist, knee]] = False  # labelled but not seen: vectors yes, heatmap no
    dec, truth, _, _ = round_trip(human, people, visible=visible)
    np.testing.assert_allclose(dec.keypoints[0], truth[0], atol=PX_TOL)
    assert dec.confidence[0, wrist] < 0.1 and dec.confidence[0, knee] < 0.1
    others = [j for j in range(18) if j not in (wrist, knee)]
    assert dec.confidence[0, others].min() > 0.5
    full = TreeDecoder(human).decode(ideal_outputs(people, human))
    assert dec.scores[0] < full.scores[0]


def test_min_person_score_drops_a_centre_with_no_joints(human):
    people = np.stack([make_person(human, (80.0, 128.0), 150.0), make_person(human, (180.0, 128.0), 150.0)])
    out = ideal_outputs(people, human)
    joints = [j for j in range(18) if j != human.root]
    out["heatmaps"][joints, :, 33:] = 0.0  # the second person: a centre peak with no joint seen around it
    assert TreeDecoder(human).decode(out).num_people == 2
    kept = TreeDecoder(human, min_person_score=0.1).decode(out)
    assert kept.num_people == 1 and kept.keypoints[0, human.root, 0] == pytest.approx(80.0, abs=PX_TOL)


def test_a_known_count_keeps_the_strongest_readings_however_faint(human):
    """min_people (a known number of animals): a faint reading of the one animal beats none; more are not kept."""
    people = np.stack([make_person(human, (80.0, 128.0), 150.0), make_person(human, (180.0, 128.0), 150.0)])
    out = ideal_outputs(people, human)
    out["heatmaps"][:, :, :33] *= 0.08  # the first person: centre peak and joints faint, the second strong
    strong = TreeDecoder(human, min_person_score=0.1).decode(out)
    assert strong.num_people == 1 and strong.keypoints[0, human.root, 0] == pytest.approx(180.0, abs=PX_TOL)
    out["heatmaps"][:, :, 33:] = 0.0  # only the faint one left: below the centre threshold and the person score
    assert TreeDecoder(human, min_person_score=0.1).decode(out).num_people == 0
    one = TreeDecoder(human, min_person_score=0.1, min_people=1).decode(out)
    assert one.num_people == 1 and one.keypoints[0, human.root, 0] == pytest.approx(80.0, abs=PX_TOL)
    two = TreeDecoder(human, min_person_score=0.1, min_people=2).decode(ideal_outputs(people, human))
    assert two.num_people == 2
    with pytest.raises(ValueError):
        TreeDecoder(human, max_people=2, min_people=3)


def test_the_walk_telescopes_to_movenet_regression(human):
    """Vectors v(p->c) = r(c) - r(p) of a centre->keypoint field r, read at the centre: a child of a parent not
    found, or found where predicted, is predicted at MoveNet's centre + r(k); a child of a parent found
    elsewhere moves with it (the walk), and its own child, not found, falls back to the centre read."""
    rng = np.random.default_rng(7)
    h = w = 64
    k, e = human.num_joints, human.num_edges
    r = rng.normal(0.0, 6.0, (k, 2, h, w)).astype(np.float32)  # noisy, different at every cell
    r[human.root] = 0.0  # MoveNet's centre is its own cell
    parent, child = human.edges[:, 0], human.edges[:, 1]
    vectors = (r[child] - r[parent]).reshape(2 * e, h, w)
    heat = np.zeros((k, h, w), np.float32)
    cx, cy = 30, 27
    yy, xx = np.mgrid[:h, :w]
    heat[human.root] = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 2.0)
    expected = (np.array([cx, cy]) + r[:, :, cy, cx]) * 4.0  # MoveNet: (cell + r(k)) * stride
    # The left shoulder is found a cell or so away from its prediction; no other joint is found.
    sh, elbow, wrist = human.index("left_shoulder"), human.index("left_elbow"), human.index("left_wrist")
    px, py = np.rint(expected[sh] / 4.0 + [1.0, 0.0]).astype(int)
    heat[sh] = np.exp(-((xx - px) ** 2 + (yy - py) ** 2) / 2.0)
    dec = TreeDecoder(human).decode({"heatmaps": heat, "vectors": vectors})
    assert dec.num_people == 1
    np.testing.assert_allclose(dec.keypoints[0, sh], [px * 4.0, py * 4.0], atol=1e-3)
    shift = np.array([px * 4.0, py * 4.0]) - expected[sh]
    assert np.abs(shift).max() > 2.0
    np.testing.assert_allclose(dec.predicted[0, elbow], expected[elbow] + shift, atol=1e-3)  # from the found shoulder
    # the wrist: its elbow was not found, so the centre read's prediction (not the moved elbow's step)
    np.testing.assert_allclose(dec.predicted[0, wrist], expected[wrist], atol=1e-3)
    others = [j for j in range(k) if j != elbow]
    np.testing.assert_allclose(dec.predicted[0, others], expected[others], atol=1e-3)
    not_found = [j for j in range(k) if j not in (sh, elbow)]
    np.testing.assert_allclose(dec.keypoints[0, not_found], expected[not_found], atol=1e-3)


def test_peaks_nms_threshold_and_plateau():
    m = np.zeros((10, 12), np.float32)
    m[2, 3] = m[2, 4] = 0.9  # plateau of two equal cells -> one peak (raster-first)
    m[7, 9] = 0.5
    m[5, 1] = 0.05  # below threshold
    p = find_peaks(m, threshold=0.1, max_peaks=5)
    assert list(zip(p.x.tolist(), p.y.tolist())) == [(3, 2), (9, 7)]
    assert p.score.tolist() == pytest.approx([0.9, 0.5])
    assert len(find_peaks(m, 0.1, max_peaks=1)) == 1
    m[4, 5] = 0.8  # 2.8 cells from the strongest peak
    assert len(find_peaks(m, 0.1, 5, min_distance=3.0)) == 2
    assert len(find_peaks(m, 0.1, 5, min_distance=2.0)) == 3
    rng = np.random.default_rng(0)
    maps = rng.random((3, 16, 16)).astype(np.float32)
    c, y, x = maxima_above(maps, 0.3)
    ref = local_maxima(maps) & (maps >= 0.3)
    assert set(zip(c.tolist(), y.tolist(), x.tolist())) == set(zip(*map(np.ndarray.tolist, np.nonzero(ref))))


def test_quadratic_refinement_is_exact_for_gaussians():
    yy, xx = np.mgrid[:20, :20]
    for mx, my in [(7.3, 11.8), (10.0, 4.49), (12.51, 9.0)]:
        g = np.exp(-((xx - mx) ** 2 + (yy - my) ** 2) / (2 * 1.3**2))
        p = find_peaks(g, 0.1, 1)
        shift = refine_quadratic(g, p.x, p.y)
        np.testing.assert_allclose(np.array([p.x[0], p.y[0]]) + shift[0], [mx, my], atol=1e-6)


def test_bilinear_sampling_is_exact_on_linear_maps():
    yy, xx = np.mgrid[:8, :9].astype(np.float64)
    maps = np.stack([2 * xx + 3 * yy, xx - yy])
    xy = np.array([[0.0, 0.0], [3.25, 4.5], [8.0, 7.0], [7.9, 0.1]])
    want = np.stack([2 * xy[:, 0] + 3 * xy[:, 1], xy[:, 0] - xy[:, 1]], axis=1)
    np.testing.assert_allclose(sample_bilinear(maps, xy), want, atol=1e-12)
    np.testing.assert_allclose(sample_bilinear(maps, np.array([[-3.0, 20.0]])), [[3 * 7.0, -7.0]])  # border


def test_assignment_resolves_conflicts_by_score():
    # Both people want candidate 0; person 1 wants it more, person 0 gets its second best.
    s = np.array([[[0.6, 0.5, 0.0], [0.9, 0.0, 0.0]]])
    assert assign_greedy(s, 0.1).tolist() == [[1, 0]]
    assert assign_hungarian(s, 0.1).tolist() == [[1, 0]]
    # Person 0's only candidate is taken: it gets nothing; too weak scores are never taken.
    s = np.array([[[0.6, 0.0], [0.9, 0.05]]])
    assert assign_greedy(s, 0.1).tolist() == [[-1, 0]]
    assert assign_hungarian(s, 0.1).tolist() == [[-1, 0]]


def _greedy_reference(s: np.ndarray, thr: float) -> list[int]:
    """Plain greedy on one (P, C) matrix: take the best remaining pair until none is >= thr."""
    s = np.where(s >= thr, s, -1.0)
    out = [-1] * s.shape[0]
    while s.size and s.max() >= thr:
        p, c = np.unravel_index(s.argmax(), s.shape)
        out[p] = int(c)
        s[p, :] = -1.0
        s[:, c] = -1.0
    return out


def test_greedy_assignment_matches_plain_greedy():
    rng = np.random.default_rng(5)
    for n_p, n_c in [(1, 1), (3, 2), (6, 6), (6, 10), (2, 7)]:
        s = rng.random((40, n_p, n_c)) * (rng.random((40, n_p, n_c)) < 0.6)  # many conflicts
        got = assign_greedy(s, 0.2)
        assert got.tolist() == [_greedy_reference(m, 0.2) for m in s]
    easy = np.eye(4)[None] * 0.9  # no conflicts: the fast path
    assert assign_greedy(easy, 0.1).tolist() == [[0, 1, 2, 3]]


def test_encoder_targets_and_weights(human):
    people = np.stack([make_person(human, (80.0, 128.0), 160.0), make_person(human, (180.0, 120.0), 150.0)])
    people[1, human.index("left_ankle")] = np.nan  # not labelled
    t = encode_targets(people, human, sigma=1.0, radius=2.0)
    k, e = human.num_joints, human.num_edges
    shapes = {"heatmaps": (k,), "offsets": (2 * k,), "vectors": (2 * e,), "depth": (1 + e,)}
    for name, (c,) in shapes.items():
        assert t[name].shape == (c, 64, 64) and t[name].dtype == np.float32
        assert t[name + "_weight"].shape == (c, 64, 64)
    assert t["heatmaps"].max() <= 1.0 and t["heatmaps_weight"].min() == 1.0
    assert not t["depth_weight"].any()  # no depth given
    r = human.root
    assert not t["offsets"][2 * r : 2 * r + 2].any() and not t["offsets_weight"][2 * r : 2 * r + 2].any()
    # Virtual root = centre of the bounding box of the visible labelled joints.
    full, _ = fill_virtual_joints(people, human)
    lab = people[0, :17]
    np.testing.assert_allclose(full[0, r], (lab.min(axis=0) + lab.max(axis=0)) / 2)
    # The unlabelled ankle's edge has no vector target at person 1's centre (weight 0).
    ea = human.edge_of_child[human.index("left_ankle")]
    cx, cy = np.rint(full[1, r] / 4).astype(int)
    assert t["vectors_weight"][2 * ea, cy, cx] == 0 and t["vectors_weight"][0, cy, cx] == 1
    nose = human.index("nose")
    np.testing.assert_allclose(t["vectors"][2 * 0 : 2, cy, cx], (full[1, nose] - full[1, r]) / 4, atol=1e-5)


def test_encoder_overlapping_discs_nearer_anchor_wins(human):
    a = make_person(human, (120.0, 128.0), 150.0)
    b = make_person(human, (132.0, 128.0), 150.0, pose={"nose": (0.05, -0.35)})
    t = encode_targets(np.stack([a, b]), human, radius=6.0)
    full, _ = fill_virtual_joints(np.stack([a, b]), human)
    ca, cb = full[:, human.root] / 4.0
    nose = human.index("nose")
    for c, who in ((ca, 0), (cb, 1)):
        x, y = np.rint(c).astype(int)
        np.testing.assert_allclose(t["vectors"][0:2, y, x], (full[who, nose] - full[who, human.root]) / 4, atol=1e-5)


def test_bad_inputs_fail_loudly(human):
    with pytest.raises(ValueError, match="assign"):
        TreeDecoder(human, assign="auction")
    with pytest.raises(ShapeError, match="people_xy"):
        encode_targets(np.zeros((1, 17, 2)), human)
    with pytest.raises(ShapeError, match="heatmaps"):
        TreeDecoder(human).decode({"heatmaps": np.zeros((17, 8, 8)), "vectors": np.zeros((34, 8, 8))})
    with pytest.raises(ShapeError, match="vectors"):
        TreeDecoder(human).decode({"heatmaps": np.zeros((18, 8, 8)), "vectors": np.zeros((34, 8, 9))})


def test_camera_lift_round_trip():
    cam = Camera(640, 480, fov_deg=60.0)
    assert cam.principal_point == (320.0, 240.0)
    assert cam.focal == pytest.approx(320.0 / np.tan(np.radians(30.0)))
    rng = np.random.default_rng(1)
    xy = rng.uniform([0, 0], [640, 480], (5, 7, 2))
    z = rng.uniform(0.5, 8.0, (5, 7))
    xyz = cam.to_camera(xy, z)
    assert xyz.shape == (5, 7, 3)
    np.testing.assert_allclose(xyz[..., 2], z)
    np.testing.assert_allclose(cam.project(xyz), xy, atol=1e-9)
    np.testing.assert_allclose(cam.to_camera(np.array([320.0, 240.0]), np.array(2.0)), [0.0, 0.0, 2.0])
    fixed = Camera(256, 256, fx=300.0)
    assert fixed.focal == 300.0 and fixed.matrix[0, 0] == 300.0 and fixed.matrix[1, 2] == 128.0
    assert lift_keypoints(xy, z, cam).dtype == np.float32
    with pytest.raises(ValueError):
        Camera(0, 10)


def test_the_field_of_view_spans_the_long_side_and_moves_depth_not_size(human):
    """A portrait frame keeps its lens: 60 degrees across its height. Another camera than the network's
    (60 degrees) puts the same person farther or nearer at the same metric size."""
    from posetracker.depth import DepthEstimator
    from posetracker.depth.lift import depth_scale

    assert Camera(1080, 1920, fov_deg=60.0).focal == pytest.approx(Camera(1920, 1080, fov_deg=60.0).focal)
    assert Camera(1080, 1920, fov_deg=60.0).focal == pytest.approx(960.0 / np.tan(np.radians(30.0)))
    assert depth_scale(60.0) == 1.0 and depth_scale(90.0) == pytest.approx(np.tan(np.radians(30.0)))
    with pytest.raises(ValueError):
        depth_scale(180.0)
    people = make_person(human, (110.0, 130.0), 170.0)[None]
    reads = np.zeros((1, 1 + len(human.edges)))
    reads[0, 0] = 3.0  # body centre 3 m from the network's camera, the joints on its plane
    xy, conf = people.astype(np.float64), np.ones(people.shape[:2])
    ref_depth, ref_world = DepthEstimator(human, 60.0, prior=None, far_depth=False).estimate(xy, conf, reads, (256, 256))
    depth, world = DepthEstimator(human, 90.0, prior=None, far_depth=False).estimate(xy, conf, reads, (256, 256))
    np.testing.assert_allclose(depth, ref_depth * depth_scale(90.0), rtol=1e-6)
    np.testing.assert_allclose(world[..., :2], ref_world[..., :2], rtol=1e-5, atol=1e-6)  # the same metric size


def test_decoded_people_lift_to_metric_3d(human):
    """Step 9 end to end: decoded (x, y, depth) lift back to the true camera-space joints."""
    cam = Camera(256, 256, fov_deg=60.0)
    people = make_person(human, (110.0, 130.0), 170.0)[None]
    depth = person_depth(human, people, [2.5])
    dec, truth, z, idx = round_trip(human, people, depth)
    depth = joint_depths(dec.depth_reads, path_matrix(human))
    np.testing.assert_allclose(lift_keypoints(dec.keypoints, depth, cam)[idx], cam.to_camera(truth, z), atol=2e-3)

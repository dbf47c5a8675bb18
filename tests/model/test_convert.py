"""The MoveNet import: tree vectors start exactly as r(c) - r(p), and the shipped file is reproducible."""

import numpy as np
import pytest
import torch

from conftest import shared_path
from posetracker.model.heads import SeparableHead


@pytest.fixture(scope="module")
def movenet_json():
    return shared_path("pretrained", "movenet", "movenet-multipose.json")


@pytest.fixture(scope="module")
def converted(movenet_json, human18):
    from posetracker.model.weights import build_from_movenet

    return build_from_movenet(movenet_json, human18)


def _raw_head(w: dict) -> SeparableHead:
    head = SeparableHead(24, w["out"].shape[0])
    sd = {
        "depthwise.conv.weight": w["depthwise"], "pointwise.conv.weight": w["pointwise"],
        "pointwise.conv.bias": w["pointwise_bias"], "out.weight": w["out"][:, :, None, None],
        "out.bias": w["out_bias"],
    }
    head.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()})
    return head.eval()


def test_tree_vectors_start_as_regression_differences(movenet_json, converted, human18):
    from posetracker.model.convert.movenet import movenet_raw_heads

    regress = _raw_head(movenet_raw_heads(movenet_json)["regress"])
    feats = torch.rand(2, 24, 16, 16, generator=torch.Generator().manual_seed(0)) * 4
    with torch.no_grad():
        r = regress(feats)  # (N, 34, h, w): (dy, dx) per COCO joint
        v = converted.heads.vectors(feats)
    r_xy = torch.stack([r[:, 1::2], r[:, 0::2]], 2)  # (N, 17, 2, h, w) as (dx, dy)
    zero = torch.zeros_like(r_xy[:, :1])
    r_xy = torch.cat([r_xy, zero], 1)  # the root (index 17) has r = 0
    for e, (p, c) in enumerate(human18.edges):
        expected = r_xy[:, c] - r_xy[:, p]
        # Exact linear map; only float32 rounding of the 96-term sums differs.
        torch.testing.assert_close(v[:, 2 * e : 2 * e + 2], expected, rtol=1e-5, atol=3e-4)


TRAINED_PARTS = {"depth": ("heads.depth.",), "temporal": ("temporal.",),
                 "keypoints": ("heads.keypoints.", "heads.offsets.")}  # part named in the weights -> its tensors


def test_shipped_weights_are_the_conversion(converted, shipped_net):
    """Every tensor of a part the shipped weights do not name as trained equals the fresh conversion."""
    shipped = shipped_net.state_dict()
    trained = tuple(p for part in shipped_net.meta.get("trained", "").split(",") for p in TRAINED_PARTS.get(part, ()))
    for name, value in converted.state_dict().items():
        if trained and name.startswith(trained):
            continue  # trained parts differ from the fresh import
        assert torch.equal(value, shipped[name]), name


def test_wrong_skeleton_is_refused(movenet_json):
    from posetracker.model.convert.movenet import movenet_state_dict
    from posetracker.skeletons import load_skeleton

    with pytest.raises(ValueError, match="COCO-17"):
        movenet_state_dict(movenet_json, load_skeleton("mouse4"))

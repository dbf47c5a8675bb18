"""Map MoveNet MultiPose's TF.js weights onto PoseNet's parameter names (numpy only).

``movenet_state_dict(json_path, spec)`` returns {PoseNet parameter name:
float32 array} for the backbone and the heads. ``thunder_state_dict(json_path)``
does the same for MoveNet SinglePose Thunder or Lightning (backbone config
``THUNDER`` / ``LIGHTNING``, the four heads unchanged), for the precision stage
and the training-time teacher. Layouts are converted from
TensorFlow's (kh, kw, in, out) to PyTorch's (out, in, kh, kw); depthwise
(kh, kw, in, 1) to (in, 1, kh, kw). The heads are re-arranged for the
skeleton (it must be COCO-17 plus a root): the centre head becomes the
root's heatmap, (dy, dx) channel pairs become (dx, dy), and the centre ->
keypoint regression becomes tree vectors by v(p -> c) = r(c) - r(p).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from posetracker.model.backbone import LIGHTNING, MOBILENET_V2_BLOCKS, THUNDER, MobileNetV2FPNConfig
from posetracker.model.convert.tfjs import TfjsGraph
from posetracker.model.heads import regression_to_vectors_matrix
from posetracker.skeletons import SkeletonSpec

COCO17 = (
    "nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder",
    "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip",
    "left_knee", "right_knee", "left_ankle", "right_ankle",
)

_BODY = "StatefulPartitionedCall/center_net_mobile_net_v2fpn_feature_extractor/model_1/"
_HEADS = "StatefulPartitionedCall/"
# (our head name, TF head scope, separable conv name, output conv name)
_HEAD_SCOPES = {
    "centre": ("center_0", "separable_conv2d_3", "conv2d_4"),
    "heatmap": ("kpt_heatmap_0", "separable_conv2d_6", "conv2d_7"),
    "regress": ("kpt_regress_0", "separable_conv2d_7", "conv2d_8"),
    "offset": ("kpt_offset_0", "separable_conv2d_8", "conv2d_9"),
    # Person box heads: used only by the original decode (the evaluation baseline).
    "box_scale": ("box_scale_0", "separable_conv2d_4", "conv2d_5"),
    "box_offset": ("box_offset_0", "separable_conv2d_5", "conv2d_6"),
}
# MoveNet SinglePose Thunder: four heads, numbered differently (no box heads).
_THUNDER_HEAD_SCOPES = {
    "centre": ("center_0", "separable_conv2d_3", "conv2d_4"),
    "heatmap": ("kpt_heatmap_0", "separable_conv2d_4", "conv2d_5"),
    "regress": ("kpt_regress_0", "separable_conv2d_5", "conv2d_6"),
    "offset": ("kpt_offset_0", "separable_conv2d_6", "conv2d_7"),
}


def _conv(w: np.ndarray) -> np.ndarray:
    """TF (kh, kw, in, out) -> torch (out, in, kh, kw)."""
    return np.ascontiguousarray(w.transpose(3, 2, 0, 1), dtype=np.float32)


def _depthwise(w: np.ndarray) -> np.ndarray:
    """TF depthwise (kh, kw, in, 1) -> torch grouped (in, 1, kh, kw)."""
    return np.ascontiguousarray(w.transpose(2, 3, 0, 1), dtype=np.float32)


def _backbone(g: TfjsGraph, blocks: tuple[tuple[int, int, int], ...] = MOBILENET_V2_BLOCKS) -> dict[str, np.ndarray]:
    sd: dict[str, np.ndarray] = {}

    def folded(ours: str, tf: str, depthwise: bool = False) -> None:
        w = g.weight(_BODY + f"model/{tf}_weights")
        sd[f"{ours}.conv.weight"] = _depthwise(w) if depthwise else _conv(w)
        sd[f"{ours}.conv.bias"] = g.weight(_BODY + f"model/{tf}_bn_offset").astype(np.float32)

    folded("backbone.body.stem", "Conv1/Conv2D")
    for i, (expand, _, _) in enumerate(blocks):
        tf = "expanded_conv" if i == 0 else f"block_{i}"
        ours = f"backbone.body.blocks.{i}"
        if expand != 1:
            folded(f"{ours}.expand", f"{tf}_expand/Conv2D")
        folded(f"{ours}.depthwise", f"{tf}_depthwise/depthwise", depthwise=True)
        folded(f"{ours}.project", f"{tf}_project/Conv2D")
    folded("backbone.body.top", "Conv_1/Conv2D")

    for ours, tf in (("lateral5", "conv2d"), ("lateral4", "conv2d_1"), ("lateral3", "conv2d_2"), ("lateral2", "conv2d_3")):
        sd[f"backbone.fpn.{ours}.conv.weight"] = _conv(g.weight(_BODY + f"{tf}/Conv2D/ReadVariableOp"))
        sd[f"backbone.fpn.{ours}.conv.bias"] = g.weight(_BODY + f"{tf}/BiasAdd/ReadVariableOp").astype(np.float32)
    for ours, tf in (("smooth4", "separable_conv2d"), ("smooth3", "separable_conv2d_1"), ("smooth2", "separable_conv2d_2")):
        p = _BODY + f"{tf}/separable_conv2d"
        sd[f"backbone.fpn.{ours}.depthwise.conv.weight"] = _depthwise(g.weight(p + "/ReadVariableOp"))
        sd[f"backbone.fpn.{ours}.pointwise.conv.weight"] = _conv(g.weight(p + "_weights"))
        sd[f"backbone.fpn.{ours}.pointwise.conv.bias"] = g.weight(p + "_bn_offset").astype(np.float32)
    return sd


def _head(g: TfjsGraph, which: str, scopes: dict[str, tuple[str, str, str]] = _HEAD_SCOPES) -> dict[str, np.ndarray]:
    """One MoveNet head as {depthwise, pointwise, pointwise_bias, out (out, hidden), out_bias}."""
    scope, sep, out = scopes[which]
    p = _HEADS + f"{scope}/{sep}"
    return {
        "depthwise": _depthwise(g.weight(p + "/separable_conv2d/ReadVariableOp")),
        "pointwise": _conv(g.weight(p + "/separable_conv2d/ReadVariableOp_1")),
        "pointwise_bias": g.weight(p + "/BiasAdd/ReadVariableOp").astype(np.float32),
        "out": _conv(g.weight(_HEADS + f"{scope}/{out}/Conv2D/ReadVariableOp"))[:, :, 0, 0],
        "out_bias": g.weight(_HEADS + f"{scope}/{out}/BiasAdd/ReadVariableOp").astype(np.float32),
    }


def _put_head(sd: dict, ours: str, h: dict, out: np.ndarray, out_bias: np.ndarray) -> None:
    sd[f"heads.{ours}.depthwise.conv.weight"] = h["depthwise"]
    sd[f"heads.{ours}.pointwise.conv.weight"] = h["pointwise"]
    sd[f"heads.{ours}.pointwise.conv.bias"] = h["pointwise_bias"]
    sd[f"heads.{ours}.out.weight"] = np.ascontiguousarray(out[:, :, None, None], dtype=np.float32)
    sd[f"heads.{ours}.out.bias"] = np.ascontiguousarray(out_bias, dtype=np.float32)


def check_coco_skeleton(spec: SkeletonSpec) -> None:
    non_root = tuple(n for i, n in enumerate(spec.joint_names) if i != spec.root)
    if non_root != COCO17:
        raise ValueError(
            f"MoveNet weights need a skeleton whose non-root joints are COCO-17 in order; "
            f"{spec.name!r} has {list(non_root)}"
        )


def movenet_state_dict(json_path: str | Path, spec: SkeletonSpec) -> dict[str, np.ndarray]:
    """PoseNet backbone + heads parameters from MoveNet MultiPose's TF.js files."""
    check_coco_skeleton(spec)
    g = TfjsGraph(json_path)
    sd = _backbone(g)
    centre, heat, regress, offset = (_head(g, k) for k in ("centre", "heatmap", "regress", "offset"))
    _put_head(sd, "centre", centre, centre["out"], centre["out_bias"])
    _put_head(sd, "keypoints", heat, heat["out"], heat["out_bias"])
    swap = np.arange(34).reshape(17, 2)[:, ::-1].ravel()  # (dy, dx) -> (dx, dy)
    _put_head(sd, "offsets", offset, offset["out"][swap], offset["out_bias"][swap])
    a = regression_to_vectors_matrix(spec, regress_yx=True)
    vec_w = (a @ regress["out"].astype(np.float64)).astype(np.float32)
    vec_b = (a @ regress["out_bias"].astype(np.float64)).astype(np.float32)
    _put_head(sd, "vectors", regress, vec_w, vec_b)
    return sd


def movenet_raw_heads(json_path: str | Path) -> dict[str, dict[str, np.ndarray]]:
    """The six original MoveNet heads' weights, unchanged (parity checks, the evaluation baseline)."""
    g = TfjsGraph(json_path)
    return {k: _head(g, k) for k in _HEAD_SCOPES}


def singlepose_config(g: TfjsGraph) -> MobileNetV2FPNConfig:
    """``THUNDER`` or ``LIGHTNING``: which MoveNet SinglePose the TF.js graph is (by the stem's width)."""
    stem = g.weights.get(_BODY + "model/Conv1/Conv2D_weights")
    for config in (THUNDER, LIGHTNING):
        if "StatefulPartitionedCall/kpt_offset_0/conv2d_7/BiasAdd" in g.nodes and stem is not None \
                and stem.shape[-1] == config.stem:
            return config
    raise ValueError(f"{g.path} is not MoveNet SinglePose Thunder or Lightning "
                     f"(need kpt_offset_0/conv2d_7 and a {THUNDER.stem}- or {LIGHTNING.stem}-channel stem)")


def thunder_state_dict(json_path: str | Path) -> dict[str, np.ndarray]:
    """MoveNet SinglePose Thunder's or Lightning's weights for ``ThunderNet`` (``model/thunder.py``).

    Keys: ``backbone.*`` (``MoveNetBackbone(THUNDER)`` or ``(LIGHTNING)``, by
    ``singlepose_config``) and
    ``heads.{centre,heatmap,regress,offset}.*`` (``SeparableHead``s with the
    original channel order: centre 1, heatmap 17, regress 34 and offset 34 as
    (dy, dx) per COCO keypoint, in grid cells). Values float32.
    """
    g = TfjsGraph(json_path)
    config = singlepose_config(g)
    sd = _backbone(g, config.blocks)
    for k in _THUNDER_HEAD_SCOPES:
        h = _head(g, k, _THUNDER_HEAD_SCOPES)
        _put_head(sd, k, h, h["out"], h["out_bias"])
    return sd

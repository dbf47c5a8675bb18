"""Read the structure and weights of the BlazePose .tflite graphs into role-named specs.

The graphs are built from a handful of regular blocks, so a walker follows
the data flow from the input and recognises them:

- encoder: stem conv, MobileNetV2 inverted-residual blocks, and lateral
  *taps* (depthwise + 1x1 conv) hanging off block outputs; it ends at the
  *neck* (an expand + depthwise pair with no projection);
- chains: sequences of ``up`` (bilinear x2), ``skip`` (add a tap), ``res``
  (BlazeBlock), ``down`` (BlazeBlock, stride 2 + max-pool shortcut),
  ``conv`` (1x1 conv) and ``sep`` (depthwise + 1x1) items, until the path
  branches or ends;
- heads: the detector's per-scale DEPTH_TO_SPACE + stride-2 depthwise heads,
  the landmark model's 2x2 VALID conv heads.

Every compute op of the graph must be claimed by exactly one of these, so a
graph that does not fit the pattern raises instead of being half-rebuilt.
Taps are named ``lat{H}_{C}`` (output size H x H, C channels) or
``neck_{C}``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posetracker.train.teachers.layers import ConvSpec
from posetracker.train.teachers.tflite import TfliteGraph, TfliteOp


@dataclass
class Block:
    """One chain item: kind in up|skip|res|down|conv|sep; ``convs`` its conv specs."""

    kind: str
    convs: tuple[ConvSpec, ...] = ()
    key: str = ""
    act: str = "none"
    pad_channels: int = 0


@dataclass
class EncoderSpec:
    stem: ConvSpec
    blocks: list[tuple[ConvSpec | None, ConvSpec, ConvSpec, bool]]  # expand, depthwise, project, residual
    taps: dict[str, tuple[int, ConvSpec, ConvSpec]]  # key -> (source block index, -1 = neck), dw, pw
    neck: tuple[ConvSpec, ConvSpec]


@dataclass
class LandmarkSpec:
    encoder: EncoderSpec
    decoder_source: str
    decoder: list[Block]
    heatmap: ConvSpec
    segmentation: list[Block]
    regression_source: str  # "decoder" or a tap key
    regression: list[Block]
    heads: dict[str, ConvSpec]  # landmarks (195), world (117), flag (1)


@dataclass
class DetectorSpec:
    encoder: EncoderSpec
    fpn: list[list[Block]]  # each chain starts from the previous output (the first from the neck)
    heads: list[tuple[str, ConvSpec, ConvSpec, ConvSpec, ConvSpec]]  # source, cls dw, cls pw, reg dw, reg pw


def _same_pad(size: int, k: int, s: int) -> tuple[int, int]:
    """TFLite SAME padding (before, after): the odd extra goes after (bottom/right)."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


class _Walker:
    def __init__(self, g: TfliteGraph):
        self.g = g
        self.seen: set[int] = set()
        self.taps: dict[int, str] = {}  # tensor -> tap key

    # -- helpers --------------------------------------------------------------------------
    def cons(self, t: int) -> list[TfliteOp]:
        return [op for op in self.g.consumers.get(t, []) if op.name not in ("DEQUANTIZE", "DENSIFY")]

    def _pad_amounts(self, op: TfliteOp) -> np.ndarray:
        return self.g.constant(op.inputs[1]).reshape(4, 2)

    def through_pad(self, t: int) -> list[TfliteOp]:
        """Consumers of t, looking through spatial PAD ops."""
        out = []
        for op in self.cons(t):
            if op.name == "PAD" and not self._pad_amounts(op)[3].any():
                out += self.cons(op.outputs[0])
            else:
                out.append(op)
        return out

    def only(self, ops: list[TfliteOp], name: str, what: str) -> TfliteOp:
        found = [op for op in ops if op.name == name]
        if len(found) != 1:
            raise ValueError(f"{self.g.path.name}: expected one {name} for {what}, found {len(found)}")
        return found[0]

    def shape(self, t: int) -> tuple[int, ...]:
        return self.g.tensors[t].shape

    def conv(self, op: TfliteOp) -> ConvSpec:
        """ConvSpec of a CONV_2D / DEPTHWISE_CONV_2D op (absorbing a PAD in front of it)."""
        g, o = self.g, op.options
        self.seen.add(op.index)
        if o["stride_h"] != o["stride_w"] or o["dilation_h"] != 1 or o["dilation_w"] != 1:
            raise ValueError(f"op {op.index}: unsupported stride/dilation {o}")
        w = g.constant(op.inputs[1]).astype(np.float32)
        bias = g.constant(op.inputs[2]).astype(np.float32) if len(op.inputs) > 2 and op.inputs[2] >= 0 \
            else np.zeros(w.shape[0] if op.name == "CONV_2D" else w.shape[3], np.float32)
        if op.name == "DEPTHWISE_CONV_2D":
            if o["depth_multiplier"] != 1:
                raise ValueError(f"op {op.index}: depth multiplier {o['depth_multiplier']}")
            weight, groups = w.transpose(3, 0, 1, 2), w.shape[3]  # (1,kh,kw,C) -> (C,1,kh,kw)
        else:
            weight, groups = w.transpose(0, 3, 1, 2), 1  # (O,kh,kw,I) -> (O,I,kh,kw)
        l = r = t = b = 0
        if o["padding"] == "SAME":
            _, h, wd, _ = self.shape(op.inputs[0])
            t, b = _same_pad(h, weight.shape[2], o["stride_h"])
            l, r = _same_pad(wd, weight.shape[3], o["stride_w"])
        prod = g.producer.get(op.inputs[0])
        if prod is not None and prod.name == "PAD":
            p = self._pad_amounts(prod)
            if p[0].any() or p[3].any():
                raise ValueError(f"op {prod.index}: PAD on batch/channels in front of a conv")
            self.seen.add(prod.index)
            t, b, l, r = t + int(p[1, 0]), b + int(p[1, 1]), l + int(p[2, 0]), r + int(p[2, 1])
        return ConvSpec(np.ascontiguousarray(weight), bias, int(o["stride_h"]), (l, r, t, b),
                        o["activation"], int(groups))

    # -- encoder ---------------------------------------------------------------------------
    def _collect_taps(self, t: int, source: int, taps: dict) -> None:
        for dw in [op for op in self.cons(t) if op.name == "DEPTHWISE_CONV_2D"]:
            pws = self.cons(dw.outputs[0])
            if len(pws) != 1 or pws[0].name != "CONV_2D":
                continue
            out = pws[0].outputs[0]
            _, h, _, c = self.shape(out)
            key = f"neck_{c}" if source < 0 else f"lat{h}_{c}"
            if key in taps:
                raise ValueError(f"duplicate tap {key}")
            taps[key] = (source, self.conv(dw), self.conv(pws[0]))
            self.taps[out] = key

    def encoder(self) -> tuple[EncoderSpec, int]:
        """The encoder spec and the neck's output tensor."""
        stem_op = self.only(self.through_pad(self.g.inputs[0]), "CONV_2D", "the stem")
        stem = self.conv(stem_op)
        dw = self.only(self.through_pad(stem_op.outputs[0]), "DEPTHWISE_CONV_2D", "block 0")
        pw = self.only(self.cons(dw.outputs[0]), "CONV_2D", "block 0 projection")
        blocks: list = [(None, self.conv(dw), self.conv(pw), False)]
        taps: dict = {}
        t = pw.outputs[0]
        while True:
            self._collect_taps(t, len(blocks) - 1, taps)
            expand = self.only(self.cons(t), "CONV_2D", f"expansion after block {len(blocks) - 1}")
            dw = self.only(self.through_pad(expand.outputs[0]), "DEPTHWISE_CONV_2D", "block depthwise")
            d = dw.outputs[0]
            proj = [op for op in self.cons(d) if op.name == "CONV_2D" and op.options["activation"] == "none"]
            if not proj:  # the neck: expand + depthwise, no projection
                neck = (self.conv(expand), self.conv(dw))
                self._collect_taps(d, -1, taps)
                return EncoderSpec(stem, blocks, taps, neck), d
            proj_op = proj[0]
            out = proj_op.outputs[0]
            adds = [op for op in self.cons(out) if op.name == "ADD" and t in op.inputs]
            residual = bool(adds)
            blocks.append((self.conv(expand), self.conv(dw), self.conv(proj_op), residual))
            if residual:
                if adds[0].options["activation"] != "none":
                    raise ValueError(f"op {adds[0].index}: activated residual add")
                self.seen.add(adds[0].index)
                out = adds[0].outputs[0]
            t = out

    # -- chains ----------------------------------------------------------------------------
    def _candidates(self, t: int) -> list[tuple[str, TfliteOp]]:
        ops = self.cons(t)
        has_pool = any(op.name == "MAX_POOL_2D" for op in ops)
        out = []
        for op in ops:
            if op.name == "RESIZE_BILINEAR":
                out.append(("up", op))
            elif op.name == "MAX_POOL_2D":
                out.append(("down", op))
            elif op.name == "DEPTHWISE_CONV_2D" and not (has_pool and op.options["stride_h"] == 2):
                pw = self.cons(op.outputs[0])
                if len(pw) == 1 and pw[0].name == "CONV_2D":
                    is_res = any(a.name == "ADD" and t in a.inputs for a in self.cons(pw[0].outputs[0]))
                    out.append(("res" if is_res else "sep", op))
            elif op.name == "ADD":
                other = [i for i in op.inputs if i != t]
                if other and other[0] in self.taps:
                    out.append(("skip", op))
            elif op.name == "CONV_2D":
                out.append(("conv", op))
            elif op.name in ("DEPTH_TO_SPACE", "RESHAPE"):
                out.append(("end", op))
        return out

    def chain(self, t: int, first: str | None = None) -> tuple[list[Block], int]:
        """Walk a chain from tensor t; returns its blocks and its output tensor."""
        blocks: list[Block] = []
        while True:
            cands = self._candidates(t)
            if first is not None:
                cands = [c for c in cands if c[0] == first]
                first = None
            if len(cands) != 1 or cands[0][0] == "end":
                return blocks, t
            kind, op = cands[0]
            self.seen.add(op.index)
            if kind == "up":
                if op.options["align_corners"] or not op.options["half_pixel_centers"]:
                    raise ValueError(f"op {op.index}: resize flags {op.options} are not half-pixel")
                blocks.append(Block("up"))
                t = op.outputs[0]
            elif kind == "skip":
                other = [i for i in op.inputs if i != t][0]
                blocks.append(Block("skip", key=self.taps[other], act=op.options["activation"]))
                t = op.outputs[0]
            elif kind == "conv":
                blocks.append(Block("conv", (self.conv(op),)))
                t = op.outputs[0]
            elif kind in ("res", "sep"):
                pw = self.cons(op.outputs[0])[0]
                convs = (self.conv(op), self.conv(pw))
                if kind == "sep":
                    blocks.append(Block("sep", convs))
                    t = pw.outputs[0]
                else:
                    add = [a for a in self.cons(pw.outputs[0]) if a.name == "ADD" and t in a.inputs][0]
                    self.seen.add(add.index)
                    blocks.append(Block("res", convs, act=add.options["activation"]))
                    t = add.outputs[0]
            else:  # down: depthwise stride 2 -> 1x1, plus max-pool shortcut (channel-padded)
                dw = self.only([o for o in self.cons(t) if o.options.get("stride_h") == 2],
                               "DEPTHWISE_CONV_2D", "a stride-2 block")
                pw = self.only(self.cons(dw.outputs[0]), "CONV_2D", "a stride-2 block")
                short, pad_c = op.outputs[0], 0
                nxt = self.cons(short)
                if len(nxt) == 1 and nxt[0].name == "PAD":
                    p = self._pad_amounts(nxt[0])
                    if p[:3].any() or p[3, 0]:
                        raise ValueError(f"op {nxt[0].index}: unexpected shortcut padding {p.tolist()}")
                    pad_c, short = int(p[3, 1]), nxt[0].outputs[0]
                    self.seen.add(nxt[0].index)
                add = self.only([a for a in self.cons(short) if pw.outputs[0] in a.inputs], "ADD", "a down add")
                self.seen.add(add.index)
                blocks.append(Block("down", (self.conv(dw), self.conv(pw)), act=add.options["activation"],
                                    pad_channels=pad_c))
                t = add.outputs[0]

    def check_all_claimed(self) -> None:
        missing = [f"{op.index}:{op.name}" for op in self.g.compute_ops() if op.index not in self.seen]
        if missing:
            raise ValueError(f"{self.g.path.name}: ops not covered by the rebuild: {missing[:12]}")

    def follow_to_output(self, t: int) -> int:
        """Follow RESHAPE/LOGISTIC/CONCATENATION ops from t to a graph output; returns its position."""
        while t not in self.g.outputs:
            ops = self.cons(t)
            if len(ops) != 1 or ops[0].name not in ("RESHAPE", "LOGISTIC", "CONCATENATION"):
                raise ValueError(f"tensor {t} does not lead to an output")
            self.seen.add(ops[0].index)
            t = ops[0].outputs[0]
        return self.g.outputs.index(t)


def landmark_spec(g: TfliteGraph) -> LandmarkSpec:
    """Spec of pose_landmark_{lite,full,heavy}.tflite (outputs: 195 landmarks, flag, seg, heatmap, 117 world)."""
    w = _Walker(g)
    enc, neck = w.encoder()
    neck_taps = {k: t for t, k in w.taps.items() if enc.taps[k][0] < 0}
    dec = [k for k, t in neck_taps.items() if any(op.name == "RESIZE_BILINEAR" for op in w.cons(t))]
    if len(dec) != 1 or len(neck_taps) != 2:
        raise ValueError(f"expected a decoder and a regression tap on the neck, found {list(neck_taps)}")
    reg_entry = [k for k in neck_taps if k != dec[0]][0]
    decoder, feat = w.chain(neck_taps[dec[0]], first="up")
    heat_op = w.only(w.cons(feat), "CONV_2D", "the heatmap head")
    heatmap = w.conv(heat_op)
    seg, _ = w.chain(feat, first="sep")
    if any(c[0] == "down" for c in w._candidates(feat)):
        reg_source = "decoder"
        regression, r = w.chain(feat, first="down")
    else:
        reg_source = reg_entry
        regression, r = w.chain(neck_taps[reg_entry], first="down")
    heads = {}
    names = {0: "landmarks", 1: "flag", 4: "world"}
    for op in w.cons(r):
        spec = w.conv(op)
        heads[names[w.follow_to_output(op.outputs[0])]] = spec
    w.check_all_claimed()
    return LandmarkSpec(enc, dec[0], decoder, heatmap, seg, reg_source, regression, heads)


def detector_spec(g: TfliteGraph) -> DetectorSpec:
    """Spec of pose_detection.tflite (outputs: boxes (1,2254,12), score logits (1,2254,1))."""
    w = _Walker(g)
    enc, neck = w.encoder()
    sources = {neck: "neck"}
    fpn: list[list[Block]] = []
    t = neck
    while any(op.name == "RESIZE_BILINEAR" for op in w.cons(t)):
        blocks, t = w.chain(t, first="up")
        fpn.append(blocks)
        sources[t] = f"fpn{len(fpn) - 1}"
    heads = []
    for src_t, name in sources.items():
        d2s = w.only(w.cons(src_t), "DEPTH_TO_SPACE", f"the {name} head")
        if d2s.options["block_size"] != 2:
            raise ValueError(f"op {d2s.index}: DEPTH_TO_SPACE block {d2s.options['block_size']}")
        w.seen.add(d2s.index)
        convs = {}
        for dw in w.through_pad(d2s.outputs[0]):
            pw = w.only(w.cons(dw.outputs[0]), "CONV_2D", f"the {name} head")
            reshape = w.cons(pw.outputs[0])[0]
            kind = "reg" if w.shape(reshape.outputs[0])[-1] > 1 else "cls"
            order = w.cons(reshape.outputs[0])[0].inputs.index(reshape.outputs[0])
            convs[kind] = (w.conv(dw), w.conv(pw), order)
            w.follow_to_output(pw.outputs[0])
        if convs["cls"][2] != convs["reg"][2]:
            raise ValueError(f"{name}: score and box heads sit at different concat positions")
        heads.append((convs["cls"][2], name, convs["cls"][0], convs["cls"][1], convs["reg"][0], convs["reg"][1]))
    heads.sort(key=lambda h: h[0])
    w.check_all_claimed()
    return DetectorSpec(enc, fpn, [h[1:] for h in heads])

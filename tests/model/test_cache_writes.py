"""Cached ONNX files written by two processes at once (batch workers on a fresh machine): each writer's
temporary file is its own, so neither deletes or reads the other's half-written file."""

import os

import onnx
import torch
from torch import nn

from posetracker.model import onnx_pads


def _padded_conv(path):
    """A one-Pad, one-Conv ONNX model at ``path``."""
    net = nn.Sequential(nn.ZeroPad2d((0, 1, 0, 1)), nn.Conv2d(3, 4, 3, stride=2))
    torch.onnx.export(net.eval(), (torch.zeros(1, 3, 16, 16),), str(path), input_names=["images"],
                      output_names=["features"], opset_version=17, dynamo=False)


def test_two_writers_folding_the_same_file_at_once(tmp_path, monkeypatch):
    src, dst = tmp_path / "raw.onnx", tmp_path / "backbone.onnx"
    _padded_conv(src)
    pids = iter([101, 202])
    monkeypatch.setattr(os, "getpid", lambda: current[0])
    current = [next(pids)]
    real = onnx_pads._constant_folded
    nested = []

    def interleaved(a, b):
        real(a, b)  # the first writer's temporary file is written ...
        if not nested:  # ... then a second writer runs from start to end before the first reads it
            nested.append(True)
            outer = current[0]
            current[0] = next(pids)
            onnx_pads.fold_pads(src, dst)
            current[0] = outer

    monkeypatch.setattr(onnx_pads, "_constant_folded", interleaved)
    onnx_pads.fold_pads(src, dst)
    assert [n.op_type for n in onnx.load(str(dst)).graph.node] == ["Conv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backbone.onnx", "raw.onnx"]  # no temporary left

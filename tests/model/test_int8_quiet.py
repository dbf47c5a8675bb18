"""The one-off 8-bit quantisation prints nothing of ONNX Runtime's quantiser and leaves the logging configuration as
it was (issue #50 item 4): ``posetracker.model.int8.quiet_quantiser`` around ``quantize_static``, for the command
line (an unconfigured root logger) and the app (an INFO console handler) alike."""

from __future__ import annotations

import logging
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from posetracker.model import int8
from posetracker.model.int8 import quiet_quantiser

QUANTISER_WORDS = ("pre-processing", "Created a copy of bias", "quantiz", "WARNING", "INFO")


def logging_state() -> tuple:
    root = logging.getLogger()
    return (list(root.handlers), list(root.filters), root.level, logging.getLogger("onnxruntime").level,
            list(warnings.filters))


@contextmanager
def root_logging(config: str):
    """The root logger as the command line leaves it ("cli": no handlers, WARNING) or as ui.app configures it
    ("app": an INFO console handler on stderr); pytest's own capture handlers are set aside meanwhile."""
    root = logging.getLogger()
    saved = list(root.handlers), root.level
    root.handlers = []
    root.setLevel(logging.WARNING)
    if config == "app":
        console = logging.StreamHandler(sys.stderr)
        console.setLevel(logging.INFO)
        root.addHandler(console)
        root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.handlers = saved[0]
        root.setLevel(saved[1])


def tiny_float_graph(path: Path) -> dict[str, list[float]]:
    """Two convolutions under the body's prefix sharing one bias (the quantiser copies it, and says so); their
    activation ranges."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(size=(4, 3, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.normal(size=(4, 4, 3, 3)).astype(np.float32), "w2"),
             numpy_helper.from_array(np.zeros(4, np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b"], ["y"], name=f"{int8.BODY}conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["y", "w2", "b"], ["z"], name=f"{int8.BODY}conv2", pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return {"x": [0.0, 255.0], "y": [-50.0, 50.0], "z": [-50.0, 50.0]}


@pytest.mark.parametrize("config", ["cli", "app"])
def test_quantising_prints_nothing_and_leaves_logging_as_it_was(tmp_path, capfd, config):
    """The library's quantise (what the first live session runs) on a tiny graph: before quiet_quantiser the
    command line printed "WARNING:root:Please consider to run pre-processing before quantization..." and kept
    the console handler ``logging.warning`` installed; the app printed "INFO ... Created a copy of bias input"."""
    ranges = tiny_float_graph(tmp_path / "tiny.float.onnx")
    with root_logging(config):
        before = logging_state()
        capfd.readouterr()
        int8.quantise(tmp_path / "tiny.float.onnx", ranges, tmp_path / "tiny.onnx", (), (int8.BODY,))
        after = logging_state()
        err = capfd.readouterr().err
    assert (tmp_path / "tiny.onnx").is_file()
    assert not [w for w in QUANTISER_WORDS if w in err], err
    assert after == before


def test_quiet_quantiser_drops_only_onnxruntime_records_under_error(capfd):
    root = logging.getLogger()

    def record(level: int, path: str, name: str = "root") -> logging.LogRecord:
        return logging.LogRecord(name, level, path, 1, f"{logging.getLevelName(level)} from {path}", None, None)

    quantiser = "/site-packages/onnxruntime/quantization/quantize.py"
    with root_logging("app"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        before = logging_state()
        capfd.readouterr()
        with quiet_quantiser():
            root.handle(record(logging.WARNING, quantiser))  # logging.warning(...) in the quantiser
            root.handle(record(logging.INFO, quantiser))
            logging.getLogger("onnxruntime.quantization.qdq_quantizer").warning("named WARNING")
            root.handle(record(logging.ERROR, quantiser))  # errors still show
            root.handle(record(logging.WARNING, "/work/posetracker/session.py"))  # others' records too
            warnings.warn_explicit("a quantiser warning", UserWarning, quantiser, 1,
                                   module="onnxruntime.quantization.quantize")
            warnings.warn_explicit("someone else's warning", UserWarning, "x.py", 1, module="x")
        err = capfd.readouterr().err
        assert logging_state() == before
    assert f"ERROR from {quantiser}" in err and "WARNING from /work/posetracker/session.py" in err
    assert f"WARNING from {quantiser}" not in err and f"INFO from {quantiser}" not in err
    assert "named WARNING" not in err
    assert [str(w.message) for w in caught] == ["someone else's warning"]


def test_quiet_quantiser_keeps_an_unconfigured_root_logger_unconfigured(capfd):
    """logging.warning() on a root logger without handlers would call basicConfig (a console handler for good);
    meanwhile the others' records still reach stderr as they would without handlers (logging.lastResort)."""
    with root_logging("cli"):
        capfd.readouterr()
        with quiet_quantiser():
            logging.warning("someone else's warning")
            logging.info("someone else's info")
        assert logging.getLogger().handlers == []
        err = capfd.readouterr().err
    assert err.count("someone else's warning") == 1 and "info" not in err


def test_quiet_quantiser_restores_after_an_error():
    with root_logging("cli"):
        before = logging_state()
        with pytest.raises(RuntimeError), quiet_quantiser():
            raise RuntimeError("quantisation failed")
        assert logging_state() == before


@pytest.mark.slow
def test_the_first_preparation_prints_nothing(tmp_path, monkeypatch, capfd):
    """The real first live session with an empty cache (export and 8-bit quantisation, ~35 s), through the
    library as ``posetracker process`` runs it: no quantiser lines on stderr, logging as it was."""
    from posetracker.model.runtime import cache_dir
    from posetracker.session import NetworkSettings, SessionConfig, TrackingSession

    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    with root_logging("cli"):
        before = logging_state()
        capfd.readouterr()
        session = TrackingSession.open(config=SessionConfig(mode="live", network=NetworkSettings(threads=1)))
        after = logging_state()
        err = capfd.readouterr().err
    assert getattr(session.stream, "int8", False)
    assert list(cache_dir().glob("live-int8-*.onnx")), "the 8-bit graph was prepared (and cached)"
    assert not [w for w in QUANTISER_WORDS if w in err], err
    assert after == before

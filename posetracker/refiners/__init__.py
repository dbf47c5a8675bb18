"""Refiner plug-ins between the heads and the final keypoints: method B
(``heatmap``: image + merged heatmap -> corrected heatmaps), method C
(``graph``: a graph network over the skeleton corrects each keypoint) and the
precision stage (``crop``: a single-person network on a crop around each person).

See :mod:`.base` for the contract, the registry and the weights files.
"""

from posetracker.refiners.base import (
    Refiner,
    RefinerChain,
    RefinerError,
    DEFAULT_REFINERS,
    available_refiners,
    build_refiner,
    default_refiners,
    load_chain,
    load_refiner,
    plugin_errors,
    refiner_label,
    refiner_path,
    register_refiner,
    registered_refiners,
    save_refiner,
    unregister_refiner,
)
from posetracker.refiners import crop, graph, heatmap  # noqa: E402,F401 - registers the built-ins


__all__ = [
    "DEFAULT_REFINERS", "Refiner", "RefinerChain", "RefinerError", "available_refiners", "build_refiner",
    "default_refiners", "load_chain", "load_refiner",
    "plugin_errors", "refiner_label", "refiner_path", "register_refiner", "registered_refiners", "save_refiner",
    "unregister_refiner",
]

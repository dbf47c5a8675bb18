"""The choices an export offers a person (the app's Export dialog builds its form from them).

Each :class:`ExportChoice` is one keyword of the exporter's ``write`` (``BvhOptions`` fields for
BVH, ``TrcExporter.write``'s for TRC) with the values a person can pick and how to say them;
the same keywords as ``posetracker export``'s ``--origin`` and ``--floor``. A choice that only means something
with another one set (the floor needs the floor origin) names it in ``needs``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ExportChoice:
    """key: the write() keyword; label: its name in a form; values: ((value, what it means), ...), the first
    the default; needs: ((other key, value it must have), ...) for this choice to apply; help: a tooltip.
    A choice between True and False is a check box (its label says what True does)."""

    key: str
    label: str
    values: tuple[tuple[Any, str], ...]
    needs: tuple[tuple[str, Any], ...] = ()
    help: str = ""

    @property
    def default(self) -> Any:
        return self.values[0][0]

    @property
    def is_flag(self) -> bool:
        return {v for v, _ in self.values} == {True, False}

    def applies(self, chosen: dict[str, Any]) -> bool:
        """Whether this choice means something with the others ``chosen`` ({key: value})."""
        return all(chosen.get(k) == v for k, v in self.needs)


CHOICES: dict[str, tuple[ExportChoice, ...]] = {
    "bvh": (
        ExportChoice("origin", "Origin", (("floor", "on the floor: Y up, people where they stood"),
                                          ("camera", "camera axes: X right, Y up, Z towards the camera")),
                     help="floor: everyone on one floor, the first person's first root at X = Z = 0"),
        ExportChoice("floor", "Floor", (("fit", "fitted to the standing feet (camera pitch and roll undone)"),
                                        ("percentile", "level camera, under the lowest joint")),
                     needs=(("origin", "floor"),),
                     help="fit: a robust plane through the ankles of every stance phase; percentile: the export "
                          "before the floor fit"),
    ),
    "trc": (
        ExportChoice("origin", "Origin", (("camera", "camera axes (Y = -camera y, mm)"),
                                          ("floor", "Y up from the fitted floor (gravity -Y for OpenSim)")),
                     help="floor: each person on the floor fitted to everyone's standing feet"),
    ),
}


def export_choices(name: str) -> tuple[ExportChoice, ...]:
    """The choices of the exporter ``name`` (none for formats without any)."""
    return CHOICES.get(name, ())


def chosen_options(name: str, chosen: dict[str, Any]) -> dict[str, Any]:
    """The keywords to pass to the exporter's write() for the values ``chosen`` ({key: value}): every choice that
    applies, its default where not chosen. Raises ValueError for an unknown key or a value it does not offer."""
    choices = {c.key: c for c in export_choices(name)}
    for key, value in chosen.items():
        if key not in choices:
            raise ValueError(f"{name}: no export choice {key!r} (choices: {sorted(choices) or 'none'})")
        if value not in [v for v, _ in choices[key].values]:
            raise ValueError(f"{name}: {key}={value!r}: choose one of {[v for v, _ in choices[key].values]}")
    full = {k: chosen.get(k, c.default) for k, c in choices.items()}
    return {k: v for k, v in full.items() if choices[k].applies(full)}


__all__ = ["CHOICES", "ExportChoice", "chosen_options", "export_choices"]

"""Exporters (registry keyed by suffix) and readers of PoseTracker's own formats.

Built-ins are registered here by explicit import; see :mod:`.registry`.
Several share the ``.csv`` suffix: a bare ``.csv`` path means the tidy CSV
(registered first); the others are chosen by name (``wide-csv``, ``dlc``,
``angles``, ``gait``).
"""

from posetracker.export.angles_csv import AnglesCsvExporter
from posetracker.export.bvh import BvhExporter
from posetracker.export.csv_tidy import TidyCsvExporter
from posetracker.export.dlc import DlcCsvExporter
from posetracker.export.gait_csv import GaitCsvExporter
from posetracker.export.json_io import JsonExporter, read_sequence
from posetracker.export.registry import (
    ExportError,
    Exporter,
    ExportWarning,
    default_name_suffix,
    exporter_for_path,
    exporters,
    get_exporter,
    register_exporter,
    unregister_exporter,
    with_suffix,
    write_reporting,
)
from posetracker.export.trc import TrcExporter
from posetracker.export.wide_csv import WideCsvExporter

register_exporter(TidyCsvExporter())
register_exporter(JsonExporter())
register_exporter(BvhExporter())
register_exporter(WideCsvExporter())
register_exporter(TrcExporter())
register_exporter(DlcCsvExporter())
register_exporter(AnglesCsvExporter())
register_exporter(GaitCsvExporter())

__all__ = [
    "ExportError",
    "default_name_suffix",
    "ExportWarning",
    "Exporter",
    "exporter_for_path",
    "with_suffix",
    "write_reporting",
    "exporters",
    "get_exporter",
    "read_sequence",
    "register_exporter",
    "unregister_exporter",
]

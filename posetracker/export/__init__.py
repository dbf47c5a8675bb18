"""Exporters (registry keyed by suffix) and readers of PoseTracker's own formats.

Built-ins are registered here by explicit import; see :mod:`.registry`.
"""

from posetracker.export.csv_tidy import TidyCsvExporter
from posetracker.export.json_io import JsonExporter, read_sequence
from posetracker.export.registry import (
    ExportError,
    Exporter,
    exporter_for_path,
    exporters,
    get_exporter,
    register_exporter,
    unregister_exporter,
)

register_exporter(TidyCsvExporter())
register_exporter(JsonExporter())

__all__ = [
    "ExportError",
    "Exporter",
    "exporter_for_path",
    "exporters",
    "get_exporter",
    "read_sequence",
    "register_exporter",
    "unregister_exporter",
]

"""The GUI's modules import each other without a circle (TYPE_CHECKING and function-local imports included)."""

import ast
from pathlib import Path

UI = Path(__file__).resolve().parents[2] / "ui"


def ui_imports() -> dict[str, set[str]]:
    """Module name -> the ui modules it imports (relatively, as they do: the package installs as posetracker_ui)."""
    graph = {}
    for path in sorted(UI.glob("*.py")):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:  # from .x import y
                deps.add(f"ui.{node.module}")
            elif isinstance(node, ast.ImportFrom) and node.level == 1:  # from . import x
                deps |= {f"ui.{alias.name}" for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ui."):
                deps.add(node.module)
            elif isinstance(node, ast.Import):
                deps |= {alias.name for alias in node.names if alias.name.startswith("ui.")}
        graph[f"ui.{path.stem}"] = deps
    return graph


def test_no_import_cycle_among_ui_modules():
    graph = ui_imports()
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        assert module not in path, "import cycle: " + " -> ".join(path[path.index(module):] + [module])
        if module in done:
            return
        for dep in sorted(graph.get(module, ())):
            visit(dep, path + [module])
        done.add(module)

    for module in graph:
        visit(module, [])
    assert "ui.main_window" in graph["ui.app"]  # the scan sees imports at all

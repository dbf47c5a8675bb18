"""The library's modules import each other without a circle (function-local and TYPE_CHECKING imports included).

The graph is read from the source with ``ast``: every ``import posetracker.x`` and ``from posetracker.x import y``
(or its relative spelling) anywhere in a module is an arrow to ``posetracker.x``, or to ``posetracker.x.y`` when
``y`` is a module itself. A package's ``__init__`` counts as the module named by the package; the implicit import
of a parent package on the way to a submodule is not an arrow (only what a module names).
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "posetracker"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def library_imports() -> dict[str, set[str]]:
    """Module name -> the posetracker modules it imports."""
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    packages = modules | {".".join(p.relative_to(ROOT).parts[:-1]) for p in paths}  # namespace packages too
    graph = {}
    for path in paths:
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # from . import x, from ..y import z
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source not in packages:
                    continue
                for alias in node.names:  # from package import module: an arrow to the module
                    sub = f"{source}.{alias.name}"
                    deps.add(sub if sub in modules else source)
        deps &= modules
        graph[name] = deps - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan), as a closed path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(path_within(graph, set(component)))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def path_within(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A closed path through ``component`` from its first module back to it (breadth-first)."""
    start = min(component)
    came = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & component):
            if w == start:
                path = [v]
                while came[path[-1]] is not None:
                    path.append(came[path[-1]])
                return [*reversed(path), start]
            if w not in came:
                came[w] = v
                queue.append(w)
    raise AssertionError("not a cycle")


def test_the_scan_sees_imports():
    graph = library_imports()
    assert "posetracker.pipeline_live" in graph["posetracker.session"]  # top-level import
    assert "posetracker.model.int8" in graph["posetracker.model.fused"]  # from posetracker.model import int8
    assert "posetracker.cpu_threads" in graph["posetracker.refiners.base"]  # an import inside a function
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_no_import_cycle_among_library_modules():
    found = cycles(library_imports())
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_decoding_stays_numpy_and_the_second_looks_are_one_family():
    """decoding/ is geometry on arrays: it imports no torch and nothing that runs a network (model, refiners,
    the session); the networks of the second looks are loaded in posetracker.second_look or the refiner registry
    (issue #51). The three looks are one registry, in the order a frame goes through them."""
    from posetracker.decoding.top_down import CROP_INPUT
    from posetracker.model.preprocess import INPUT_SIZE
    from posetracker.second_look import SECOND_LOOKS, SecondLook

    graph = library_imports()
    for path in sorted((PACKAGE / "decoding").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not {m for m in names if m.split(".")[0] == "torch"}, f"{path.name} imports torch"
        up = {m for m in graph[module_name(path)]
              if m.startswith(("posetracker.model", "posetracker.refiners", "posetracker.session"))}
        assert not up, f"{path.name} imports {sorted(up)}"
    assert list(SECOND_LOOKS) == ["tiles", "animal_crops", "precision_crops"]
    assert all(isinstance(look, SecondLook) for look in SECOND_LOOKS.values())
    assert [look.keeps_input for look in SECOND_LOOKS.values()] == [False, False, True]
    assert CROP_INPUT == INPUT_SIZE

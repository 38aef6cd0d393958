"""The house's layers: every import of a gputree module, at module level or
inside a function, goes to a module of its own layer or of a layer below,
and no chain of imports comes back to where it started.

Read from the source with ``ast`` (nothing is imported): ``from . import x``
and ``from .x import y`` are resolved to the module they load (a submodule
``y`` where there is one). The layers, lowest first, are the map of the
package; a module missing from them fails the test, so a new room has to be
placed on purpose.
"""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gputree"

#: lowest first; each entry a module or a package prefix (dotted, below gputree)
LAYERS = [
    ("foundations", ["_dtypes", "_compat", "_threads", "_arrays", "_progress",
                     "_compile_cache", "_lazy"]),
    ("exact arithmetic on the host", ["fixed_point", "quantiles"]),
    ("the fitted tree", ["tree"]),
    ("devices", ["backends"]),
    ("data in", ["data"]),
    ("criteria", ["criteria"]),
    ("growth", ["growth"]),
    ("the fitted model", ["model"]),
    ("reading models", ["explain", "io"]),
    ("estimators", ["estimators"]),
    ("on top", ["model_selection", "dask", "demo", "__init__"]),
]


def module_name(path):
    """Dotted name below gputree of a source file ("backends.cpu", "__init__")."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def all_modules():
    """Dotted name -> path of every module of the package."""
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _resolve(module, path, node, modules):
    """The gputree modules an import node of ``module`` loads."""
    is_package = path.name == "__init__.py"
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
        return [n[len("gputree."):] if n != "gputree" else "__init__"
                for n in names if n == "gputree" or n.startswith("gputree.")]
    if node.level == 0:
        if node.module is None or not (node.module == "gputree"
                                       or node.module.startswith("gputree.")):
            return []
        base = node.module[len("gputree"):].lstrip(".")
    else:
        here = module.split(".") if module != "__init__" else []
        anchor = here if is_package else here[:-1]
        anchor = anchor[:len(anchor) - (node.level - 1)] if node.level > 1 else anchor
        base = ".".join(anchor + ([node.module] if node.module else []))
    targets = []
    for alias in node.names:
        candidate = f"{base}.{alias.name}" if base else alias.name
        if candidate in modules:
            targets.append(candidate)
        else:
            targets.append(base or "__init__")
    return targets


def import_graph():
    """module -> set of gputree modules it imports (anywhere in its source)."""
    modules = all_modules()
    graph = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges.update(t for t in _resolve(module, path, node, modules)
                             if t != module)
        graph[module] = edges
    return graph


def layer_of(module):
    """Index in LAYERS of a module (by its longest matching entry), or None."""
    best, best_length = None, -1
    for index, (_, entries) in enumerate(LAYERS):
        for entry in entries:
            if (module == entry or module.startswith(entry + ".")) and len(entry) > best_length:
                best, best_length = index, len(entry)
    return best


def cycles(graph):
    """Every strongly connected set of two or more modules (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
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
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer():
    missing = [m for m in all_modules() if layer_of(m) is None]
    assert not missing, f"modules in no layer of tests/test_layers.py: {missing}"


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_imports_only_go_down():
    upward = [f"{m} ({LAYERS[layer_of(m)][0]}) imports {t} ({LAYERS[layer_of(t)][0]})"
              for m, targets in import_graph().items() for t in sorted(targets)
              if layer_of(m) is not None and layer_of(t) is not None
              and layer_of(t) > layer_of(m)]
    assert not upward, "\n".join(upward)


def test_every_module_says_what_it_owns():
    silent = [m for m, path in all_modules().items()
              if ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) is None]
    assert not silent, f"modules without an opening docstring: {silent}"


@pytest.mark.parametrize("source, expected", [
    ("from .a import b\nimport gputree.c\n", {"a", "c"}),
    ("def f():\n    from .a import b\n", {"a"}),
    ("from . import a\n", {"a"}),
])
def test_the_graph_counts_every_import(tmp_path, monkeypatch, source, expected):
    """The checker itself: imports at module level and inside functions,
    relative and absolute, are edges; a cycle through a function's import
    is found."""
    package = tmp_path / "gputree"
    package.mkdir()
    (package / "__init__.py").write_text('"""p"""\n')
    (package / "a.py").write_text('"""a"""\n')
    (package / "c.py").write_text('"""c"""\n')
    (package / "m.py").write_text(source)
    monkeypatch.setitem(globals(), "PACKAGE", package)
    graph = import_graph()
    assert graph["m"] == expected
    (package / "a.py").write_text('"""a"""\ndef g():\n    from . import m\n')
    assert cycles(import_graph()) == [["a", "m"]]


def test_every_package_is_installed():
    """pyproject.toml lists its packages by name: a new folder of gputree
    missing there would be left out of a pip install."""
    tomllib = pytest.importorskip("tomllib")
    with open(PACKAGE.parent / "pyproject.toml", "rb") as stream:
        listed = set(tomllib.load(stream)["tool"]["setuptools"]["packages"])
    folders = {"gputree" + "".join("." + p for p in path.parent.relative_to(PACKAGE).parts)
               for path in PACKAGE.rglob("*.py")}
    assert folders <= listed, f"missing from pyproject.toml: {sorted(folders - listed)}"

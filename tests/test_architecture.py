"""The layers of ``src/sessiontape`` hold: imports run downwards, through each layer's front.

ARCHITECTURE.md draws the layers; this test is what keeps the drawing true. Every import in
every module is read with :mod:`ast` (those under ``TYPE_CHECKING`` and inside functions
too, and the entries of a front's lazy re-export table, ``_EXPORTS``, which are imports
made on first access) and checked against three rules:

1. a module imports only from its own unit or from units of a lower rank (so two units of
   the same rank, such as the two engines, never import each other);
2. across units, only a unit's front is imported (a package's ``__init__``, or a one-module
   unit), and only its public names, never a ``_private`` module or name;
3. the module graph has no cycle.

Module and class sizes are held to the limits of the style guide as well.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT = "sessiontape"

#: Each unit's rank: a unit may import units of a lower rank only.
RANKS: dict[str, int] = {
    "sessiontape._version": 0,
    "sessiontape._errors": 0,
    "sessiontape._context": 0,
    "sessiontape._time": 0,
    "sessiontape._clock": 0,
    "sessiontape._lazy": 0,
    "sessiontape.cassette": 1,
    "sessiontape.scrub": 2,
    "sessiontape.report": 2,
    "sessiontape.recorder": 3,
    "sessiontape.replayer": 3,
    "sessiontape.fleet": 3,
    "sessiontape.boundaries": 4,
    "sessiontape.review": 4,
    "sessiontape.tape": 5,
    "sessiontape._hookspecs": 6,
    "sessiontape._hooks": 7,
    "sessiontape._api": 8,
    "sessiontape": 9,
    "sessiontape.plugin": 10,
    "sessiontape.examples": 10,
    "sessiontape.examples.gardener": 10,
    "sessiontape.reduce": 11,
    "sessiontape.cli": 12,
    "sessiontape.__main__": 13,
}

MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 300


@dataclass(frozen=True)
class Import:
    """One imported module (and the names taken from it) at a line of a module."""

    module: str
    names: tuple[str, ...]
    line: int


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    return {module_name(root, p): p for p in sorted((root / ROOT).rglob("*.py"))}


#: The name of a front's lazy re-export table (``sessiontape._lazy``): name -> module.
LAZY_TABLE = "_EXPORTS"


def lazy_table(tree: ast.Module) -> dict[str, tuple[str, int]]:
    """A module's ``_EXPORTS`` table as ``{name: (relative module, line)}`` (or empty)."""
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if not (isinstance(target, ast.Name) and target.id == LAZY_TABLE):
            continue
        assert isinstance(node, (ast.Assign, ast.AnnAssign))
        assert isinstance(node.value, ast.Dict), f"{LAZY_TABLE} must be a dict literal"
        table: dict[str, tuple[str, int]] = {}
        for key, value in zip(node.value.keys, node.value.values, strict=True):
            assert isinstance(key, ast.Constant)
            assert isinstance(key.value, str)
            assert isinstance(value, ast.Constant)
            assert isinstance(value.value, str)
            table[key.value] = (value.value, value.lineno)
        return table
    return {}


def _resolve(package: str, level: int, module: str | None) -> str:
    base = package.split(".")
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def imports_of(name: str, path: Path, known: set[str]) -> Iterator[Import]:
    """Every import of a sessiontape module in ``path``, resolved to module names (a lazy
    re-export counts as an import of its name from its module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for exported, (relative, line) in lazy_table(tree).items():
        module = relative.lstrip(".")
        target = _resolve(package, len(relative) - len(module), module or None)
        if target in known:
            yield Import(target, (exported,), line)
        else:  # a module name that does not exist, reported as such
            yield Import(target, (), line)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == ROOT:
                    yield Import(alias.name, (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(package, node.level, node.module) if node.level else node.module
            if target is None or target.split(".")[0] != ROOT:
                continue
            plain: list[str] = []
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:  # `from . import _hooks`: an import of that module
                    yield Import(sub, (), node.lineno)
                else:
                    plain.append(alias.name)
            if plain:
                yield Import(target, tuple(plain), node.lineno)


def unit_of(module: str) -> str:
    """The unit (a ranked package or module) that ``module`` belongs to."""
    candidates = [u for u in RANKS if module == u or module.startswith(u + ".")]
    return max(candidates, key=len)


def violations(root: Path) -> list[str]:
    """Every breach of the three rules in the tree under ``root``, as readable lines."""
    found: list[str] = []
    mods = modules(root)
    known = set(mods)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        unit = unit_of(name)
        for imp in imports_of(name, path, known):
            where = f"{path.relative_to(root)}:{imp.line}"
            if imp.module not in known:
                found.append(f"{where}: imports {imp.module}, which does not exist")
                continue
            graph[name].add(imp.module)
            target = unit_of(imp.module)
            if target == unit:
                continue
            if RANKS[target] >= RANKS[unit]:
                found.append(
                    f"{where}: {unit} (rank {RANKS[unit]}) imports {target} "
                    f"(rank {RANKS[target]}); imports must run downwards"
                )
            if imp.module != target:
                found.append(
                    f"{where}: imports {imp.module}, inside {target}; import {target} itself"
                )
            private = [n for n in imp.names if n.startswith("_") and not n.endswith("__")]
            if private:
                found.append(f"{where}: imports private names {private} from {imp.module}")
    found.extend(f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_every_module_belongs_to_a_ranked_unit() -> None:
    unranked = [m for m in modules(SRC) if not any(m == u or m.startswith(u + ".") for u in RANKS)]
    assert unranked == []


def test_the_layers_hold() -> None:
    assert violations(SRC) == []


def _type_checking_imports(tree: ast.Module, package: str) -> dict[str, str]:
    """``{name: absolute module}`` of the imports under a front's ``if TYPE_CHECKING:``."""
    found: dict[str, str] = {}
    for node in tree.body:
        if not (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING"
        ):
            continue
        for inner in node.body:
            if isinstance(inner, ast.ImportFrom) and inner.level:
                module = _resolve(package, inner.level, inner.module)
                found.update((alias.asname or alias.name, module) for alias in inner.names)
    return found


def test_lazy_fronts_say_the_same_thing_three_times() -> None:
    """A lazy front's table, its ``__all__`` and its ``TYPE_CHECKING`` imports (what mypy
    and IDEs see) name the same things, from the same modules; the package serves each."""
    import importlib

    fronts = 0
    for name, path in modules(SRC).items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        table = lazy_table(tree)
        if not table:
            continue
        fronts += 1
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        resolved = {
            n: _resolve(package, len(rel) - len(rel.lstrip(".")), rel.lstrip(".") or None)
            for n, (rel, _) in table.items()
        }
        assert _type_checking_imports(tree, package) == resolved, name
        front = importlib.import_module(name)
        assert sorted(front.__all__) == sorted(table), name
        for exported, module in resolved.items():
            assert getattr(front, exported) is getattr(importlib.import_module(module), exported)
        assert set(table) <= set(dir(front))
    assert fronts >= 2  # sessiontape and sessiontape.tape


#: Modules that are generated tables of data, not code to read (their generator, under
#: ``scripts/``, is the code): gitleaks' rules, as the scrubber applies them.
GENERATED_DATA = frozenset({"sessiontape.scrub._gitleaks"})


def test_no_module_or_class_is_too_long_to_read_in_one_sitting() -> None:
    too_long: list[str] = []
    for name, path in modules(SRC).items():
        if name in GENERATED_DATA:
            continue
        source = path.read_text(encoding="utf-8")
        lines = source.count("\n")
        if lines > MAX_MODULE_LINES:
            too_long.append(f"{name}: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > MAX_CLASS_LINES:
                    too_long.append(f"{name}.{node.name}: {length} lines")
    assert too_long == []


# -- the checker finds what it must ---------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in {"sessiontape/__init__.py": "", **files}.items():
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {
                "sessiontape/cassette/__init__.py": "from ..recorder import Recorder\n",
                "sessiontape/recorder/__init__.py": "Recorder = 1\n",
            },
            "sessiontape/cassette/__init__.py:1: sessiontape.cassette (rank 1) imports "
            "sessiontape.recorder (rank 3); imports must run downwards",
            id="upwards",
        ),
        pytest.param(
            {
                "sessiontape/recorder/__init__.py": "from ..replayer import ReplayEngine\n",
                "sessiontape/replayer/__init__.py": "ReplayEngine = 1\n",
            },
            "sessiontape/recorder/__init__.py:1: sessiontape.recorder (rank 3) imports "
            "sessiontape.replayer (rank 3); imports must run downwards",
            id="the engines import each other",
        ),
        pytest.param(
            {
                "sessiontape/boundaries/__init__.py": "",
                "sessiontape/boundaries/_popen.py": "from ..recorder._recorder import Recorder\n",
                "sessiontape/recorder/__init__.py": "",
                "sessiontape/recorder/_recorder.py": "Recorder = 1\n",
            },
            "sessiontape/boundaries/_popen.py:1: imports sessiontape.recorder._recorder, "
            "inside sessiontape.recorder; import sessiontape.recorder itself",
            id="a private module across layers",
        ),
        pytest.param(
            {
                "sessiontape/boundaries/__init__.py": "from ..replayer import _helper\n",
                "sessiontape/replayer/__init__.py": "_helper = 1\n",
            },
            "sessiontape/boundaries/__init__.py:1: imports private names ['_helper'] "
            "from sessiontape.replayer",
            id="a private name across layers",
        ),
        pytest.param(
            {
                "sessiontape/report/__init__.py": "",
                "sessiontape/report/_a.py": "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from ._b import B\n",
                "sessiontape/report/_b.py": "from ._a import A\n",
            },
            "import cycle: sessiontape.report._a -> sessiontape.report._b",
            id="a cycle through TYPE_CHECKING",
        ),
        pytest.param(
            {
                "sessiontape/cassette/__init__.py": '_EXPORTS = {"Recorder": "..recorder"}\n',
                "sessiontape/recorder/__init__.py": "Recorder = 1\n",
            },
            "sessiontape/cassette/__init__.py:1: sessiontape.cassette (rank 1) imports "
            "sessiontape.recorder (rank 3); imports must run downwards",
            id="a lazy re-export upwards",
        ),
        pytest.param(
            {
                "sessiontape/tape/__init__.py": '_EXPORTS: dict[str, str] = {"X": "..report._x"}\n',
                "sessiontape/report/__init__.py": "",
                "sessiontape/report/_x.py": "X = 1\n",
            },
            "sessiontape/tape/__init__.py:1: imports sessiontape.report._x, inside "
            "sessiontape.report; import sessiontape.report itself",
            id="a lazy re-export of a private module across layers",
        ),
    ],
)
def test_the_checker_names_each_breach(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    assert violations(_tree(tmp_path, files)) == [expected]


def test_the_checker_accepts_a_clean_tree(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "sessiontape/cassette/__init__.py": "from ._entries import Entry\n",
            "sessiontape/cassette/_entries.py": "Entry = 1\n",
            "sessiontape/recorder/__init__.py": "from ..cassette import Entry\n"
            "from .. import _errors\n",
            "sessiontape/_errors.py": "",
        },
    )
    assert violations(root) == []

"""The two trees ``bench/run.py --against REV`` compares, each in its own environment.

REV's tree is exported from git (``git archive``: the files of that commit, nothing of
the repository's state, no worktree registered) into a cache folder; this checkout is
measured as it is, uncommitted changes included. Each tree gets its own virtualenv, made
the same way with the same interpreter: the exact versions of every distribution installed
in the environment running the bench (so both trees run on the same pytest, msgspec,
freezegun...), then the tree itself, editable, with its ``test`` and ``bench`` extras
constrained to those versions. Both are cached, keyed by the commit (or this checkout's
folder), the interpreter and the pinned versions: a second run builds nothing.

The cache is ``$SESSIONTAPE_BENCH_CACHE``, else ``$XDG_CACHE_HOME/sessiontape-bench``, else
``~/.cache/sessiontape-bench``; delete it whenever you like. It keeps the environments of
the last few trees used (:data:`KEPT_ENVIRONMENTS`; each is over a gigabyte) and their
exports; :func:`evict` removes the others after each run.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Final, NamedTuple

#: Where progress is reported.
_Log = Callable[[str], object]

__all__ = [
    "KEPT_ENVIRONMENTS",
    "Tree",
    "cache_root",
    "checkout_tree",
    "evict",
    "pinned_requirements",
    "revision_tree",
]

#: Distributions never pinned into a tree's environment: the trees themselves, and the
#: installer (each venv keeps the pip it was made with).
_NOT_PINNED: Final = frozenset({"sessiontape", "pip"})
#: Written last into a finished tree or environment: a half-built one is built again.
_DONE: Final = ".sessiontape-bench-complete"
#: How many finished environments the cache keeps (the most recently used; the run's own
#: are always kept): each holds the whole test and bench extras, over a gigabyte.
KEPT_ENVIRONMENTS: Final = 4


class Tree(NamedTuple):
    """One side of the comparison."""

    #: How the tables name it: the commit's short hash, or ``this tree``.
    label: str
    #: The tree's top folder (``pyproject.toml``, ``src/``).
    root: Path
    #: The interpreter of its own environment.
    python: Path

    @property
    def src(self) -> Path:
        return self.root / "src"


def cache_root() -> Path:
    """Where exported trees and their environments are kept between runs."""
    explicit = os.environ.get("SESSIONTAPE_BENCH_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "sessiontape-bench"


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(
            f"bench: git {' '.join(args)} failed in {root}: {done.stderr.strip()}\n"
            "Name a commit of this repository (a hash, a tag, a branch): "
            "nox -s bench -- --against HEAD~1"
        )
    return done.stdout.strip()


def pinned_requirements() -> list[str]:
    """``name==version`` of every distribution this interpreter has installed, but the
    trees themselves: what both environments are built from."""
    pins: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if not name:
            continue
        key = name.lower().replace("_", "-")
        if key in _NOT_PINNED or dist.read_text("direct_url.json") is not None:
            continue  # editable or from a URL: not something an index serves
        pins[key] = f"{key}=={dist.version}"
    return sorted(pins.values())


def _export(root: Path, sha: str, dest: Path) -> None:
    """The files of commit ``sha`` in ``dest`` (made whole, then renamed into place)."""
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", "--format=tar", sha], capture_output=True, check=False
    )
    if archive.returncode != 0:
        raise SystemExit(f"bench: git archive {sha} failed: {archive.stderr.decode().strip()}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{sha[:12]}.", dir=dest.parent))
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(staging, filter="data")
    (staging / _DONE).write_text(sha + "\n", encoding="utf-8")
    if dest.exists():  # a half-made export of an earlier, interrupted run
        shutil.rmtree(dest)
    staging.rename(dest)


def _environment(tree_root: Path, key: str, pins: list[str], log: _Log) -> Path:
    """A virtualenv for ``tree_root`` (cached by ``key``, the pins and the interpreter);
    its interpreter."""
    digest = hashlib.sha256(
        "\n".join([sys.version, sys.executable, key, *pins]).encode()
        + (tree_root / "pyproject.toml").read_bytes()
    ).hexdigest()[:16]
    venv = cache_root() / "venvs" / f"{Path(key).name[:24]}-{digest}"
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if (venv / _DONE).exists():
        os.utime(venv / _DONE)  # used now: what eviction keeps longest
        return python
    if venv.exists():
        shutil.rmtree(venv)
    log(f"building the environment of {tree_root} in {venv} (once; cached)...")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    requirements = venv / "pinned.txt"
    requirements.write_text("\n".join(pins) + "\n", encoding="utf-8")
    subprocess.run([*pip, "-r", str(requirements)], check=True)
    # The tree's own dependencies, held to the same versions (one it has and this
    # environment lacks is resolved as pip would).
    subprocess.run([*pip, "-c", str(requirements), "-e", f"{tree_root}[test,bench]"], check=True)
    (venv / _DONE).write_text(key + "\n", encoding="utf-8")
    return python


def revision_tree(root: Path, rev: str, pins: list[str], log: _Log) -> Tree:
    """Commit ``rev`` of the repository at ``root``, exported and installed."""
    sha = _git(root, "rev-parse", "--verify", f"{rev}^{{commit}}")
    dest = cache_root() / "trees" / sha
    if not (dest / _DONE).exists():
        log(f"exporting {rev} ({sha[:12]}) to {dest}...")
        _export(root, sha, dest)
    return Tree(sha[:7], dest, _environment(dest, sha, pins, log))


def _venv_of(tree: Tree) -> Path:
    return tree.python.parent.parent


def _finished(folder: Path) -> list[tuple[float, Path]]:
    """The finished entries of ``folder`` (those holding the completion marker this module
    writes last), with when each was last used; nothing else is ever removed."""
    if not folder.is_dir():
        return []
    return [
        ((entry / _DONE).stat().st_mtime, entry)
        for entry in folder.iterdir()
        if entry.is_dir() and not entry.is_symlink() and (entry / _DONE).is_file()
    ]


def evict(in_use: tuple[Tree, ...], log: _Log, *, kept: int = KEPT_ENVIRONMENTS) -> list[Path]:
    """Remove the cached environments beyond the ``kept`` most recently used (``in_use``'s
    are always kept), and the exported trees no kept environment was made for; what was
    removed.

    Only folders this module finished are touched (they hold its marker): a half-built
    one is left for the next run to rebuild, and anything else in the cache is not ours."""
    root = cache_root()
    own = {_venv_of(tree).resolve() for tree in in_use}
    by_use = sorted(_finished(root / "venvs"), reverse=True)
    others = [venv for _, venv in by_use if venv.resolve() not in own]
    keep = own | {venv.resolve() for venv in others[: max(0, kept - len(own))]}
    removed = [venv for _, venv in by_use if venv.resolve() not in keep]
    # An environment's folder is named by its key's first 24 characters: a commit's sha.
    kept_keys = {venv.name.rsplit("-", 1)[0] for venv in keep}
    roots = {tree.root.resolve() for tree in in_use}
    removed += [
        tree
        for _, tree in _finished(root / "trees")
        if tree.name[:24] not in kept_keys and tree.resolve() not in roots
    ]
    for path in removed:
        log(f"removing {path} from the bench cache (not among the {kept} last used)")
        shutil.rmtree(path, ignore_errors=True)
    return removed


def checkout_tree(root: Path, pins: list[str], log: _Log) -> Tree:
    """This checkout, as it is on disk, in an environment made like REV's."""
    key = "checkout-" + hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:12]
    return Tree("this tree", root, _environment(root, key, pins, log))

"""A stdlib program to review changes of: processes through ``subprocess`` under
``patch_subprocess()``, with a word of our own, a call that can be dropped and a call
that can be added in front."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import sessiontape
from sessiontape.cli import main

PY = sys.executable


def program(word: str = "hello", *, drop_last: bool = False, tail: str = "last") -> list[str]:
    """Three processes: one carries ``word``, the last one can be left out or reworded."""
    out = [subprocess.run([PY, "-c", f"print({word!r})"], capture_output=True, text=True).stdout]
    out.append(subprocess.check_output([PY, "-c", "print('middle')"], text=True))
    if not drop_last:
        out.append(
            subprocess.run([PY, "-c", f"print({tail!r})"], capture_output=True, text=True).stdout
        )
    return out


def record(path: Path, **kwargs: Any) -> list[str]:
    with sessiontape.record(path) as tape, tape.patch_subprocess():
        return program(**kwargs)


def replay(path: Path, *, update: Any = False, **kwargs: Any) -> sessiontape.ReplayReport:
    with sessiontape.replay(path, update=update) as tape:
        with tape.patch_subprocess():
            program(**kwargs)
        return tape.finish()


def copy(path: Path, name: str) -> Path:
    target = path.with_name(name)
    shutil.copyfile(path, target)
    return target


def validate(path: Path) -> int:
    """``sessiontape validate PATH``'s exit code."""
    return main(["validate", str(path)])

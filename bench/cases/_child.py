"""Run one measurement in a fresh interpreter: ``_child.py module:function JSON_KWARGS``.

Whole-tape figures (end-to-end replay, load, peak RSS) are taken in a fresh process each
time, so that one measurement does not inherit the heap, the GC generations or the peak
RSS of the one before. The function's JSON-ready result is printed on stdout.

``bench/run.py --against REV`` runs this file with the interpreter of the tree under test
and names that tree's ``src/`` in ``SESSIONTAPE_BENCH_TREE``: the cases (this checkout's
``bench/``) then measure that tree's sessiontape, and the child refuses to measure another.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

_BENCH = Path(__file__).resolve().parent.parent
#: The ``src/`` of the tree under test (``--against``), else this checkout's.
_SRC = Path(os.environ.get("SESSIONTAPE_BENCH_TREE") or _BENCH.parent / "src").resolve()
for _path in (_SRC, _BENCH):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def main() -> None:
    target, raw = sys.argv[1], sys.argv[2]
    if os.environ.get("SESSIONTAPE_BENCH_TREE"):
        import sessiontape

        where = Path(sessiontape.__file__ or "?").resolve()
        if not where.is_relative_to(_SRC):
            raise SystemExit(f"{target}: this interpreter imports {where}, not the one in {_SRC}")
    module_name, _, func_name = target.partition(":")
    func = getattr(importlib.import_module(module_name), func_name)
    print(json.dumps(func(**json.loads(raw))))


if __name__ == "__main__":
    main()

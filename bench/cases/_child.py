"""Run one measurement in a fresh interpreter: ``_child.py module:function JSON_KWARGS``.

Whole-tape figures (end-to-end replay, load, peak RSS) are taken in a fresh process each
time, so that one measurement does not inherit the heap, the GC generations or the peak
RSS of the one before. The function's JSON-ready result is printed on stdout.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

_BENCH = Path(__file__).resolve().parent.parent
for _path in (_BENCH.parent / "src", _BENCH):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def main() -> None:
    target, raw = sys.argv[1], sys.argv[2]
    module_name, _, func_name = target.partition(":")
    func = getattr(importlib.import_module(module_name), func_name)
    print(json.dumps(func(**json.loads(raw))))


if __name__ == "__main__":
    main()

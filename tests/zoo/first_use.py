"""Recording off, first use from many threads (or asyncio tasks) at once, in a fresh interpreter.

``python first_use.py MODULE_PATH COUNT BASE`` imports the zoo program at ``MODULE_PATH``
(which imports ``sessiontape``, as an application does, and touches nothing of it yet) and
runs it ``COUNT`` times at once, recording off (``sessiontape.record(None)``): in as many
threads released together by a barrier, or, for a program with an ``async def serve``, as
as many tasks on one loop. Every exception (in those threads, in the threads the program
starts, in the tasks) is caught. It prints one JSON object: the exceptions, and the
outcomes of the runs that ended.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import threading
import traceback
from pathlib import Path
from typing import Any


def main() -> int:
    path, count, base = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    import sessiontape  # already imported by the program: nothing of it touched yet

    errors: list[str] = []
    outcomes: list[Any] = []
    lock = threading.Lock()

    def died(args: threading.ExceptHookArgs) -> None:
        with lock:
            errors.append("".join(traceback.format_exception(args.exc_value)))

    threading.excepthook = died
    workdirs = [base / f"run-{i}" for i in range(count)]
    for workdir in workdirs:
        workdir.mkdir(parents=True)

    if hasattr(module, "serve"):

        async def task() -> None:
            try:
                outcomes.append(await module.serve(sessiontape.record(None)))
            except Exception:
                errors.append(traceback.format_exc())

        async def together() -> None:
            await asyncio.gather(*(task() for _ in workdirs))

        asyncio.run(together())
    else:
        barrier = threading.Barrier(count)

        def run_one(workdir: Path) -> None:
            barrier.wait()
            outcome = module.run(sessiontape.record(None), workdir)
            with lock:
                outcomes.append(outcome)

        threads = [threading.Thread(target=run_one, args=(w,)) for w in workdirs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    print(json.dumps({"errors": errors, "outcomes": outcomes}, default=repr))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``patch_subprocess()``: the process boundary for code that takes no injected runner.

Interception is below the name: methods of :class:`subprocess.Popen` itself are replaced
for the block (``_pipes``), so ``run``, ``check_output``, ``Popen`` bound by ``from
subprocess import Popen`` and asyncio's subprocesses are all covered. Recording
(``_record``) relays each pipe to log the bytes that cross it; replay (``_replay``) spawns
nothing and feeds the real pipes from the tape (``_pump``); a live re-record (``_live``)
sends each process to one side or the other. Both write and read the
process boundary's entries through ``_process``, so a patched call and a runner call are
the same entry.
"""

from __future__ import annotations

from ._fake import running_loop
from ._live import live_popen
from ._pipes import TAPE_PID_BASE
from ._record import recording_popen
from ._replay import replaying_popen

__all__ = [
    "TAPE_PID_BASE",
    "live_popen",
    "recording_popen",
    "replaying_popen",
    "running_loop",
]

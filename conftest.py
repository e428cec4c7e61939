"""Replays the regression corpus in ``cassettes/`` against today's example orchestrator.

``pytest cassettes/`` collects every cassette as a test item and hands it to the
``sessiontape_replay`` hook below, which runs the bundled gardener orchestrator against
it. To add a regression tape, record a scenario (see ``cassettes/README.md``).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from sessiontape import Recording, ReplayTape
from sessiontape.examples.gardener import ENTRYPOINT, WORK_ROOT, run_session


def sessiontape_replay(tape: ReplayTape, recording: Recording) -> Any:
    """Run the gardener against a gardener cassette; leave other cassettes to others."""
    if recording.header.entrypoint != ENTRYPOINT:
        return None
    workdir = Path(tempfile.mkdtemp(prefix="gardener-replay-"))
    try:
        tape.set_roots({WORK_ROOT: str(workdir)})
        run_session(tape, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return True

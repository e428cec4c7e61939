"""The README's complete example runs as written: it records, then replays green."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _recording_example() -> str:
    """The code block under "## Recording" that says it is complete and runnable."""
    section = README.read_text(encoding="utf-8").split("\n## Recording\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    blocks = _BLOCK.findall(section)
    assert blocks, "the Recording section lost its example"
    return str(blocks[0])


def test_the_store_example_has_no_mode_check() -> None:
    code = _recording_example()
    assert "tape.mode" not in code
    assert "Mode." not in code


def test_the_recording_example_runs_as_written(tmp_path: Path) -> None:
    # As a script of its own, the way a reader runs it (and dataclasses need a real module).
    script = tmp_path / "example.py"
    script.write_text(_recording_example(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "SESSIONTAPE_RECORD"}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("replay of run.jsonl matched: 3 calls served\n")
    assert (tmp_path / "run.jsonl").is_file()


def test_the_claude_agent_sdk_example_runs_as_written(tmp_path: Path) -> None:
    pytest.importorskip("claude_agent_sdk")
    section = README.read_text(encoding="utf-8").split("\n## Recording the Claude Agent SDK\n")[1]
    (code, *_) = _BLOCK.findall(section.split("\n## ", 1)[0])
    script = tmp_path / "sdk_example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith("/sdk.jsonl matched: 1 call served")
    assert lines[3] == "1 value made up today or read between calls, followed:"
    assert lines[4].startswith("  seq 1 (main, process.chunks[0].data): '")
    assert lines[4].endswith("(detected), served in seq 1 chunks[1]")

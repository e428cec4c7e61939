"""A child that answers each line of its stdin reversed, and a conversation with it through
``subprocess.Popen`` (line by line: each answer read before the next line is written)."""

from __future__ import annotations

import subprocess

from .conftest import PY

REVERSE = "import sys\nfor line in sys.stdin:\n    print(line.strip()[::-1], flush=True)"


def talk(words: list[str]) -> list[str]:
    pipe = subprocess.PIPE
    proc = subprocess.Popen([PY, "-c", REVERSE], stdin=pipe, stdout=pipe, text=True, bufsize=1)
    assert proc.stdin is not None
    assert proc.stdout is not None
    answers = []
    for word in words:
        proc.stdin.write(word + "\n")
        proc.stdin.flush()
        answers.append(proc.stdout.readline())
    proc.stdin.close()
    proc.wait()
    return answers

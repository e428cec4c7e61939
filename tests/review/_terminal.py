"""A command run in a real pseudo-terminal (the standard library's ``pty``), driven key by
key: what ``sessiontape review`` sees when a person types."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path
from typing import Final

_ANSI: Final = re.compile(r"\x1b\[[0-9;]*m")
#: Only a hang waits this long: every wait ends on the text it waits for.
TIMEOUT: Final = 120.0


class Terminal:
    """``python -m sessiontape ARGS`` on a pseudo-terminal: :meth:`expect` waits for
    text (colours stripped), :meth:`send` types keys."""

    def __init__(self, *args: str, cwd: Path) -> None:
        master, slave = pty.openpty()
        self._fd = master
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sessiontape", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            close_fds=True,
        )
        os.close(slave)
        self.text = ""
        self._seen = 0

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self._fd], [], [], timeout)
        if not ready:
            raise AssertionError(f"nothing more from the terminal; so far:\n{self.text}")
        try:
            data = os.read(self._fd, 4096)
        except OSError:  # EIO: the command ended and closed the terminal
            return False
        if not data:
            return False
        self.text += _ANSI.sub("", data.decode("utf-8", "replace").replace("\r\n", "\n"))
        return True

    def expect(self, wanted: str) -> str:
        """Wait until ``wanted`` appears after what the last call saw; the text up to and
        including it."""
        while True:
            at = self.text.find(wanted, self._seen)
            if at >= 0:
                end = at + len(wanted)
                shown, self._seen = self.text[self._seen : end], end
                return shown
            if not self._read(TIMEOUT):
                raise AssertionError(f"the command ended without {wanted!r}:\n{self.text}")

    def send(self, keys: str) -> None:
        os.write(self._fd, keys.encode())

    def finish(self) -> tuple[int, str]:
        """Wait for the command to end; its exit code and what it printed after the last
        :meth:`expect`."""
        while self._read(TIMEOUT):
            pass
        code = self.proc.wait(TIMEOUT)
        os.close(self._fd)
        return code, self.text[self._seen :]

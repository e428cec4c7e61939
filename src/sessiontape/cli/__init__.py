"""The ``sessiontape`` command line: look into, check, cut, scrub, view and export cassettes.

``sessiontape list | show | stats | diff | validate | scrub | slice | report | serve |
export |
demo``; ``sessiontape COMMAND --help`` says more. :func:`main` runs it from Python and returns the
exit code: 0 ok, 1 a finding, 2 a usage error or unreadable input.
"""

from __future__ import annotations

from ._main import main

__all__ = ["main"]

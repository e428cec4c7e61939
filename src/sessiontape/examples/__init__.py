"""Example applications that ship with sessiontape.

They are real programs with real boundaries, so that ``sessiontape demo``, the docs and
sessiontape's own regression cassettes have something true to record and replay.
"""

from __future__ import annotations

__all__: list[str] = []

"""The recording engine: seqs, the data policy and the write path of one cassette.

Boundaries record through :class:`Recorder` (see ``boundaries/``); it knows nothing of
the calls' shapes beyond the entry each boundary builds. It never imports the replay
engine, nor the replay engine it.
"""

from __future__ import annotations

from ._recorder import COMMON_FIELDS, Opened, Recorder, common_fields
from ._target import IF_EXISTS, IfExists

__all__ = ["COMMON_FIELDS", "IF_EXISTS", "IfExists", "Opened", "Recorder", "common_fields"]

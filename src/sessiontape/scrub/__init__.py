"""The scrub layer: what a value looks like on tape, applied before it touches disk.

Values are made JSON-ready (:func:`to_data`), secrets are redacted (by their shape and by
the name they are stored under) and paths under known roots become placeholders. The
recorder applies this to everything it writes; replay applies the same to today's
requests, so both sides compare alike. It sits below both engines for that reason.
"""

from __future__ import annotations

from ._data import Unencodable, encodes_as, error_info, format_traceback, qualname, to_data
from ._entry import SCRUBBED_FIELDS, scrub_entry, scrub_fields
from ._names import REDACTED_MARK, SECRET_ENV_NAME, is_secret_name, redaction_mark
from ._roots import PathRoots, expand_data
from ._scrubber import Scrubber
from ._shapes import contains_secret, redact

__all__ = [
    "REDACTED_MARK",
    "SCRUBBED_FIELDS",
    "SECRET_ENV_NAME",
    "PathRoots",
    "Scrubber",
    "Unencodable",
    "contains_secret",
    "encodes_as",
    "error_info",
    "expand_data",
    "format_traceback",
    "is_secret_name",
    "qualname",
    "redact",
    "redaction_mark",
    "scrub_entry",
    "scrub_fields",
    "to_data",
]

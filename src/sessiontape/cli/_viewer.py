"""The viewer page: one HTML file, its CSS and script inlined, for ``serve`` and ``report``.

The front-end is plain HTML, CSS and JavaScript shipped as package data in ``viewer/``:
no framework and no build step. Its script is ``api.js``, ``rows.js``, ``lanemodel.js``
and ``lanes.js`` (the lane view's canvas), ``sides.js`` (two runs side by side),
``chaos.js`` (a chaos receipt's failure and the probability line of its explanation),
``pending.js`` (a tape's pending changes, read-only) and ``viewer.js`` joined, in that
order, inside one strict-mode function. ``serve`` sends the page as it is and the script
asks the JSON API for data; ``report`` puts the data into the page itself (gzip, base64)
and the script serves it to the same code through an in-page copy of the API.

The page carries a Content-Security-Policy that allows its own script and style (by
hash) and nothing else: no other script runs even if recorded text were ever to reach
the page as markup, and a report cannot fetch anything.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import html
import re
from collections.abc import Iterable, Iterator, Sequence
from importlib import resources
from typing import Final

__all__ = ["Blob", "csp", "embedded", "page"]

#: An embedded data block: the element id the script reads and its gzip bytes, in pieces.
Blob = tuple[str, Iterable[bytes]]

_ASSETS: Final = "viewer"
_SCRIPTS: Final = (
    "api.js",
    "rows.js",
    "lanemodel.js",
    "lanes.js",
    "sides.js",
    "chaos.js",
    "pending.js",
    "viewer.js",
)
# Markers in index.html, each replaced once.
_TITLE: Final = "{{title}}"
_MODE: Final = "{{mode}}"
_STYLE: Final = "/*{{style}}*/"
_SCRIPT: Final = "/*{{script}}*/"
_DATA: Final = "<!--{{data}}-->"
_POLICY: Final = "{{csp}}"


@functools.cache
def _asset(name: str) -> str:
    return (resources.files(__package__) / _ASSETS / name).read_text(encoding="utf-8")


@functools.cache
def _script() -> str:
    """The page's script: the files of :data:`_SCRIPTS` in one function scope."""
    body = "\n".join(_asset(name) for name in _SCRIPTS)
    return f"(() => {{\n'use strict';\n{body}}})();\n"


def _hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


@functools.cache
def csp(*, connect: bool) -> str:
    """The page's Content-Security-Policy; ``connect`` allows requests to its own server."""
    script, style = _hash(_script()), _hash(_asset("viewer.css"))
    origin = "'self'" if connect else "'none'"
    return (
        f"default-src 'none'; script-src {script}; style-src {style}; img-src data:; "
        f"connect-src {origin}; base-uri 'none'; form-action 'none'"
    )


def _base64(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Base64 of the concatenated ``chunks``, encoded as they come."""
    carry = b""
    for chunk in chunks:
        data = carry + chunk
        cut = len(data) - len(data) % 3  # base64 works in groups of three bytes
        carry = data[cut:]
        if cut:
            yield base64.b64encode(data[:cut])
    if carry:
        yield base64.b64encode(carry)


def page(title: str, *, mode: str, blobs: Sequence[Blob] = ()) -> Iterator[bytes]:
    """The viewer page in chunks: ``mode`` is ``serve`` or ``report``.

    Each blob (its element id and its gzip bytes, in pieces) is embedded as base64 in a
    ``<script type="application/gzip">`` element, which browsers never run and whose
    text base64 cannot end early. The pieces are read as the page is written.
    """
    template = _asset("index.html")
    head, tail = template.split(_DATA)
    head = (
        head.replace(_TITLE, html.escape(title))
        .replace(_MODE, mode)
        .replace(_POLICY, csp(connect=mode == "serve"))
        .replace(_STYLE, _asset("viewer.css"))
    )
    yield head.encode("utf-8")
    for element_id, pieces in blobs:
        yield f'<script id="{element_id}" type="application/gzip">'.encode()
        yield from _base64(pieces)
        yield b"</script>\n"
    yield tail.replace(_SCRIPT, _script()).encode("utf-8")


_BLOB: Final = re.compile(
    r'<script id="([\w-]+)" type="application/gzip">([A-Za-z0-9+/=]*)</script>'
)


def embedded(text: str) -> dict[str, bytes]:
    """The data blobs of a page :func:`page` wrote, unpacked: element id -> bytes."""
    return {m[1]: gzip.decompress(base64.b64decode(m[2])) for m in _BLOB.finditer(text)}

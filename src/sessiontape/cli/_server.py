"""The HTTP side of ``sessiontape serve``: the viewer page and its JSON API.

Built on the standard library's :class:`http.server.ThreadingHTTPServer`: the viewer is a
local tool serving one person, a handful of requests a second, so a thread per request is
plenty, and sessiontape takes no web framework as a dependency for it. Routes:

``GET /``
    the viewer page (HTML, script and style inline)
``GET /api/cassettes``
    ``{"cassettes": [...]}``: every cassette found, with its header
``GET /api/cassettes/<name>``
    one cassette: header, workers, boundaries, kinds, counts, the receipt's mismatches
``GET /api/cassettes/<name>/entries?offset=&limit=&worker=&boundary=&kind=&status=&q=&seek=``
    a page of rows and ``total``, the number of rows the filters select
``GET /api/cassettes/<name>/entries/<seq>``
    one entry: every field, its parent and children, the receipt's field diffs
``GET /api/cassettes/<name>/columns``
    every row's seq, worker, kind, parent, depth, start, duration, status and error
    class as columns (the report embeds the same): what the lane view draws
``GET /api/sides?a=<name>&b=<name>``
    two cassettes side by side: each one's columns (texts included), the pairs of
    matching calls and the fork point (``cli/_sides.py``)

``<name>`` is URL-encoded (a cassette in a subfolder is ``sub%2Frun.jsonl``). Errors are
JSON too: ``{"error": "..."}`` with 400, 403, 404, 405 or 500. The server answers only
requests addressed to it by a loopback name (``127.0.0.1``, ``localhost``) when bound to
loopback, so a web page elsewhere cannot reach it by rebinding its own host name.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final, final
from urllib.parse import parse_qs, unquote, urlsplit

import msgspec

from .._errors import CassetteError
from ._catalog import MAX_LIMIT, Catalog, Query, QueryError
from ._viewer import csp, page

__all__ = ["ViewerServer"]

_DEFAULT_LIMIT: Final = 100
_LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")


class _HTTPError(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@final
class ViewerServer(ThreadingHTTPServer):
    """The viewer's server over ``catalog``; ``serve_forever()`` runs it.

    ``port`` 0 picks a free port; :attr:`url` says which. ``log`` gets a line per
    request when ``verbose``, and a line per server error always.
    """

    daemon_threads = True  # a stuck request never keeps the process alive after Ctrl-C

    def __init__(
        self,
        catalog: Catalog,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        verbose: bool = False,
    ) -> None:
        self.address_family = _family(host)
        super().__init__((host.strip("[]"), port), _Handler)
        self.catalog = catalog
        self.verbose = verbose
        self.host = host
        self.page = b"".join(page("sessiontape", mode="serve"))
        self.policy = csp(connect=True) + "; frame-ancestors 'none'"
        bound_port = self.server_address[1]
        self.allowed_hosts: frozenset[str] | None = None
        if _is_loopback(host):
            self.allowed_hosts = frozenset(
                {f"{name}:{bound_port}" for name in _LOOPBACK_NAMES} | {f"{host}:{bound_port}"}
            )

    @property
    def url(self) -> str:
        """Where the viewer is, for a browser."""
        host = self.host if ":" not in self.host or self.host.startswith("[") else f"[{self.host}]"
        return f"http://{host}:{self.server_address[1]}/"


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _int(params: dict[str, list[str]], name: str, default: int | None) -> int | None:
    values = params.get(name)
    if not values:
        return default
    try:
        value = int(values[-1])
    except ValueError:
        raise QueryError(f"{name}={values[-1]!r} is not a whole number.") from None
    if value < 0:
        raise QueryError(f"{name}={value} is negative; give 0 or more.")
    return value


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "sessiontape"

    def version_string(self) -> str:
        return self.server_version  # no Python version in the Server header

    # -- plumbing --------------------------------------------------------------------------

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        if content_type.startswith("text/html"):
            self.send_header("Content-Security-Policy", self.server.policy)
            self.send_header("X-Frame-Options", "DENY")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, data: Any, status: HTTPStatus = HTTPStatus.OK) -> None:
        self._send(status, msgspec.json.encode(data), "application/json; charset=utf-8")

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

    def _refuse(self, status: HTTPStatus, message: str) -> None:
        self._json({"error": message}, status)

    # -- methods ---------------------------------------------------------------------------

    def do_GET(self) -> None:
        try:
            self._check_host()
            self._route()
        except _HTTPError as exc:
            self._refuse(exc.status, str(exc))
        except QueryError as exc:
            self._refuse(HTTPStatus.BAD_REQUEST, str(exc))
        except CassetteError as exc:  # a cassette that no longer loads
            sys.stderr.write(f"sessiontape serve: {exc}\n")
            self._refuse(HTTPStatus.INTERNAL_SERVER_ERROR, str(exc))

    do_HEAD = do_GET

    def _not_allowed(self) -> None:
        self._refuse(
            HTTPStatus.METHOD_NOT_ALLOWED,
            f"{self.command} is not supported: the viewer's API is read-only; use GET.",
        )

    do_POST = do_PUT = do_DELETE = do_PATCH = _not_allowed

    def _check_host(self) -> None:
        allowed = self.server.allowed_hosts
        host = self.headers.get("Host", "")
        if allowed is not None and host not in allowed:
            raise _HTTPError(
                HTTPStatus.FORBIDDEN,
                f"this server answers requests for {self.server.url} only, not for host "
                f"{host!r}; open it by that address.",
            )

    def _route(self) -> None:
        split = urlsplit(self.path)
        parts = [unquote(part) for part in split.path.split("/")[1:]]
        params = parse_qs(split.query)
        catalog = self.server.catalog
        if parts in ([""], ["index.html"]):
            self._send(HTTPStatus.OK, self.server.page, "text/html; charset=utf-8")
            return
        if parts == ["api", "sides"]:
            self._sides(params)
            return
        if parts[:2] != ["api", "cassettes"]:
            raise _HTTPError(HTTPStatus.NOT_FOUND, f"no such page: {split.path}.")
        if len(parts) == 2 or parts[2:] == [""]:
            self._json({"cassettes": catalog.listing(), "against": catalog.against})
            return
        name = parts[2]
        loaded = catalog.get(name)
        if loaded is None:
            raise _HTTPError(
                HTTPStatus.NOT_FOUND,
                f"no cassette named {name!r}; GET /api/cassettes lists them.",
            )
        rest = parts[3:]
        if not rest:
            self._json(loaded.data)
        elif rest == ["entries"]:
            offset = _int(params, "offset", 0) or 0
            limit = min(_int(params, "limit", _DEFAULT_LIMIT) or 0, MAX_LIMIT)
            seek = _int(params, "seek", None)
            self._json(loaded.page(Query.from_params(params), offset, limit, seek))
        elif rest == ["columns"]:
            self._send(HTTPStatus.OK, loaded.columns(), "application/json")
        elif len(rest) == 2 and rest[0] == "entries":
            try:
                seq = int(rest[1])
            except ValueError:
                raise _HTTPError(
                    HTTPStatus.NOT_FOUND, f"{rest[1]!r} is not a seq; entries are named by seq."
                ) from None
            found = loaded.entry(seq, Query.from_params(params))
            if found is None:
                raise _HTTPError(HTTPStatus.NOT_FOUND, f"{name} has no entry with seq {seq}.")
            self._json(found)
        else:
            raise _HTTPError(HTTPStatus.NOT_FOUND, f"no such page: {split.path}.")

    def _sides(self, params: dict[str, list[str]]) -> None:
        names = [params.get(side, [""])[-1] for side in ("a", "b")]
        if not all(names):
            raise QueryError("name both cassettes: /api/sides?a=NAME&b=NAME.")
        found = self.server.catalog.sides(names[0], names[1])
        if found is None:
            missing = next(n for n in names if self.server.catalog.get(n) is None)
            raise _HTTPError(
                HTTPStatus.NOT_FOUND,
                f"no cassette named {missing!r}; GET /api/cassettes lists them.",
            )
        self._send(HTTPStatus.OK, found, "application/json")

"""Replay's fast path: a replayed process's pipes, made when the program first touches them.

``Popen.__init__`` makes a pipe and one or two file objects for every stream that is a
``PIPE`` before it spawns, and something closes them after: 5 to 8 µs a stream on Linux,
more than all the rest of a replayed call (``bench/cases/replay_call.py`` measures
CPython's ``subprocess.run(..., capture_output=True, text=True)`` with the spawn stubbed
out at about 28 µs, against 3 µs for a ``Popen`` with no pipe). A program that only calls
``communicate()`` (``run``, ``check_output``, ``getoutput``...) never touches them: what it
gets back is on the tape. So, on replay, the piped streams are *wired* (:class:`Wiring`)
instead of made: ``Popen.__init__`` runs with them left out, and while the patch is on,
``Popen.stdin``, ``.stdout`` and ``.stderr`` are :class:`StreamAttribute` descriptors. The
first time the program touches one of a process's streams, all its pipes and file objects
are made there and then, exactly as CPython makes them (same types, buffer sizes, text
wrappers, encodings), and fed from the tape; from then on CPython's own code runs over
them as it always did. A ``communicate()`` on a process whose pipes were never made is
answered from the tape (:func:`stdin_bytes`, :func:`read_as`, :func:`close_answered`): the
same values, the same streams left behind (closed file objects of the same types), the
same attributes set, with no pipe, no thread and no system call (but for the closed file
objects, made once for each kind of stream).

The placeholder never leaks: code that swaps a stream attribute for a while
(``mock.patch.object(proc, "stdin")``) saves the placeholder and puts it back; if the
pipes were made meanwhile, the file made for that stream is what it puts back (and what
the stream was made into is left alone while the stand-in is there), as if the stream had
been made before the swap, as CPython makes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import select
import subprocess
import threading
from collections.abc import Callable
from typing import Any, Final

from ._pipes import TRACKER

__all__ = [
    "LAZY",
    "STREAMS",
    "StreamAttribute",
    "Wiring",
    "close_answered",
    "fits",
    "make_pipes",
    "read_as",
    "stdin_bytes",
]

#: The three stream attributes of a ``Popen``, in the order CPython makes them.
STREAMS: Final = ("stdin", "stdout", "stderr")

#: A pipe is at least this large (POSIX: a write of up to ``PIPE_BUF`` bytes is atomic, so
#: an empty pipe takes that much without blocking). Larger recorded outputs ask the pipe.
_ALWAYS_FITS: Final = select.PIPE_BUF
_GETPIPE_SZ: Final[int | None] = getattr(fcntl, "F_GETPIPE_SZ", None)
_SETPIPE_SZ: Final[int | None] = getattr(fcntl, "F_SETPIPE_SZ", None)


class _Lazy:
    """The value of a stream attribute whose pipe is not made yet (see the module)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<sessiontape: pipe made when first used>"


#: What a wired stream's slot in the ``Popen``'s ``__dict__`` holds until it is made.
LAZY: Final = _Lazy()


class Wiring:
    """How one ``Popen``'s piped streams are to be made: what ``Popen.__init__`` would
    have made them with. Made before ``__init__`` runs (its presence is what tells the
    patched ``_get_handles`` to leave the pipes out), completed after."""

    __slots__ = (
        "bufsize", "encoding", "errors", "line_buffering", "made", "merged", "pipes", "text",
    )  # fmt: skip

    def __init__(self, bufsize: Any) -> None:
        self.bufsize = bufsize
        #: The streams that are a ``PIPE`` and not made yet, in :data:`STREAMS` order.
        self.pipes: tuple[str, ...] = ()
        #: ``stderr=STDOUT`` into a piped stdout: the child's stderr goes to that pipe.
        self.merged = False
        self.text = False
        self.encoding: str | None = None
        self.errors: str | None = None
        self.line_buffering = False
        #: The file objects made for the streams, by name, once they are made.
        self.made: dict[str, Any] = {}

    def wire(self, stdin: Any, stdout: Any, stderr: Any) -> tuple[Any, Any, Any]:
        """Take the ``PIPE`` streams of ``_get_handles``'s arguments; return what is left
        for CPython's ``_get_handles`` (``DEVNULL``, files and fds are CPython's to open)."""
        pipe, to_stdout = subprocess.PIPE, subprocess.STDOUT
        pipes: list[str] = []
        if stdin is not None and stdin == pipe:
            pipes.append("stdin")
            stdin = None
        if stdout is not None and stdout == pipe:
            pipes.append("stdout")
            stdout = None
        if stderr is not None:
            if stderr == pipe:
                pipes.append("stderr")
                stderr = None
            elif stderr == to_stdout and "stdout" in pipes:
                self.merged = True
                stderr = None
        self.pipes = tuple(pipes)
        return stdin, stdout, stderr

    def complete(self, popen: Any) -> None:
        """Note the text mode ``Popen.__init__`` settled on (it made its files with it)."""
        bufsize = -1 if self.bufsize is None else self.bufsize
        self.text = bool(popen.text_mode)
        self.encoding = popen.encoding
        self.errors = popen.errors
        if self.text and bufsize == 1:
            self.line_buffering = True
            bufsize = -1  # as CPython: the binary buffer under a line-buffered text file
        self.bufsize = bufsize

    def file(self, name: str, fd: int) -> Any:
        """The file object ``Popen.__init__`` makes for stream ``name`` over ``fd``."""
        if name == "stdin":
            raw = open(fd, "wb", self.bufsize)  # noqa: SIM115 (the Popen owns it)
            if not self.text:
                return raw
            return io.TextIOWrapper(
                raw,
                write_through=True,
                line_buffering=self.line_buffering,
                encoding=self.encoding,
                errors=self.errors,
            )
        raw = open(fd, "rb", self.bufsize)  # noqa: SIM115
        if not self.text:
            return raw
        return io.TextIOWrapper(raw, encoding=self.encoding, errors=self.errors)

    def closed_files(self) -> dict[str, Any]:
        """Closed file objects of the types :meth:`file` makes, by stream: what the
        streams are once ``communicate()`` has closed them. Shared by every process wired
        alike (a closed file holds no descriptor and has no state left to share)."""
        key = (self.bufsize, self.text, self.encoding, self.errors, self.line_buffering)
        found = _CLOSED.get(key)
        if found is None:
            found = {name: self._closed_file(name) for name in STREAMS}
            with _CLOSED_LOCK:
                found = _CLOSED.setdefault(key, found)
        return found

    def _closed_file(self, name: str) -> Any:
        read, write = os.pipe()
        ours, other = (write, read) if name == "stdin" else (read, write)
        try:
            made = self.file(name, ours)
        except BaseException:
            os.close(ours)
            raise
        finally:
            os.close(other)
        made.close()
        return made


#: CPython's own newline translation (a subclass that replaces it gets its own called).
_TRANSLATE: Final = vars(subprocess.Popen)["_translate_newlines"]
_CLOSED: dict[tuple[Any, ...], dict[str, Any]] = {}
_CLOSED_LOCK: Final = threading.Lock()


def make_pipes(popen: Any, wiring: Wiring, pipesize: int) -> dict[str, int]:
    """Make the wired streams' pipes and file objects on ``popen`` as ``Popen.__init__``
    would have; return the child's ends by stream (``stderr``'s is stdout's when merged)."""
    child: dict[str, int] = {}
    loose: list[int] = []  # descriptors no file object owns yet
    files: list[Any] = []
    try:
        for name in wiring.pipes:
            read, write = os.pipe()
            loose += (read, write)
            if pipesize > 0 and _SETPIPE_SZ is not None:
                fcntl.fcntl(write, _SETPIPE_SZ, pipesize)
            parent, child[name] = (write, read) if name == "stdin" else (read, write)
            files.append(wiring.file(name, parent))
            loose.remove(parent)
    except BaseException:  # out of descriptors, say: nothing made is left open
        for file in files:
            with contextlib.suppress(OSError):
                file.close()
        for fd in loose:
            with contextlib.suppress(OSError):
                os.close(fd)
        raise
    slots = popen.__dict__
    for name, file in zip(wiring.pipes, files, strict=True):
        wiring.made[name] = file
        # A stand-in the program put there meanwhile stays until it puts the
        # placeholder back (StreamAttribute.__set__ then puts this file instead).
        # (None: Popen.__init__ has not set the stream yet.)
        current = slots.get(name)
        if current is None or current is LAZY:
            slots[name] = file
    if wiring.merged:
        child["stderr"] = child["stdout"]
    wiring.pipes = ()
    return child


def fits(fd: int, size: int) -> bool:
    """Whether ``size`` bytes written to the empty pipe ``fd`` complete without a reader.

    Where the pipe cannot be asked its size (``F_GETPIPE_SZ`` is Linux's), only what
    POSIX guarantees is assumed: a wrong guess would block the write for ever.
    """
    if size <= _ALWAYS_FITS:
        return True
    if _GETPIPE_SZ is None:
        return False
    try:
        return size <= fcntl.fcntl(fd, _GETPIPE_SZ)
    except OSError:
        return False


class StreamAttribute:
    """``Popen.stdin``/``stdout``/``stderr`` while replay is on: a data descriptor over the
    instance's own slot that makes a wired process's pipes when the program first reads one.

    Every other ``Popen`` sees its attribute as it always does (read and written in its
    ``__dict__``); a data descriptor, not ``__getattr__``, so that ``object.__getattribute__``
    (``psutil.Popen`` reaches the wrapped ``Popen`` with it) finds it too.
    """

    __slots__ = ("name", "opener")

    def __init__(self, name: str, opener: Callable[[Any], Wiring | None]) -> None:
        self.name = name
        #: Makes every wired pipe of the process it is given; returns its wiring (where
        #: the made files are), ``None`` for a process replay does not serve.
        self.opener = opener

    def __get__(self, popen: Any, owner: type | None = None) -> Any:
        name = self.name
        if popen is None:  # as without the patch: the class has no such attribute
            owner_name = owner.__name__ if owner is not None else "Popen"
            raise AttributeError(f"type object {owner_name!r} has no attribute {name!r}")
        slots = popen.__dict__
        try:
            value = slots[name]
        except KeyError:
            raise AttributeError(
                f"{type(popen).__name__!r} object has no attribute {name!r}", name=name, obj=popen
            ) from None
        if value is LAZY:
            wiring = self.opener(popen)
            value = slots[name]
            if value is LAZY:  # put back over the file made meanwhile (see the module)
                value = wiring.made.get(name, LAZY) if wiring is not None else LAZY
                slots[name] = value
        return value

    def __set__(self, popen: Any, value: Any) -> None:
        if value is LAZY:  # a swap undone (see the module): the made file, if made
            wiring = getattr(popen.__dict__.get(TRACKER), "wiring", None)
            if type(wiring) is Wiring:
                value = wiring.made.get(self.name, LAZY)
        popen.__dict__[self.name] = value

    def __delete__(self, popen: Any) -> None:
        try:
            del popen.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None


def stdin_bytes(wiring: Wiring, input: Any, stdin: Any) -> bytes | None:
    """The bytes ``communicate(input)`` would write to a piped stdin, or ``None`` when only
    CPython's own code can say what happens (an input of the wrong type, one that does
    not encode): the caller then makes the pipes and lets it run. ``stdin`` is a file of
    the type the stream would be (its ``encoding`` and ``errors`` are what CPython uses,
    ``"locale"`` resolved)."""
    if input is None:
        return b""  # communicate() writes nothing and closes stdin
    if wiring.text:
        if type(input) is not str:
            return None
        try:
            return input.encode(stdin.encoding, stdin.errors)
        except UnicodeError:
            return None
    if type(input) is bytes:
        return input
    if type(input) is bytearray:
        return bytes(input)
    return None  # a memoryview, an array, a str in binary mode...


def read_as(popen: Any, wiring: Wiring, raw: bytes, stream: Any) -> Any:
    """What ``communicate()`` returns for a stream that carried ``raw``; ``None`` when it
    would raise (bytes that do not decode), so that CPython's own code raises it.
    ``stream`` is a file of the type the stream would be.

    In text mode CPython decodes with the stream's encoding and errors and turns
    ``\\r\\n`` and ``\\r`` into ``\\n``: by ``Popen._translate_newlines`` with two or three
    pipes, by the text file's universal newlines with one, which give the same string.
    Output with no ``\\r`` in it skips the two ``str.replace`` calls, which scan it even
    so (3 µs for 4 kB, most of a replayed call).
    """
    if not wiring.text:
        return raw
    encoding, errors = stream.encoding, stream.errors
    try:
        if b"\r" in raw or type(popen)._translate_newlines is not _TRANSLATE:
            return popen._translate_newlines(raw, encoding, errors)
        return raw.decode(encoding, errors)
    except UnicodeError:
        return None


def close_answered(
    popen: Any,
    wiring: Wiring,
    closed: dict[str, Any],
    names: tuple[str, ...],
    raw: tuple[bytes | None, bytes | None],
    input: Any,
    written: bytes | None,
) -> None:
    """Leave ``popen`` as CPython's ``communicate()`` leaves it: every piped stream a closed
    file object and, where it took its select loop (two or more pipes, or a timeout:
    ``popen._communication_started`` says so), the state a second ``communicate()`` reads
    back (so that it returns the same output again, as CPython's does). ``closed`` is
    :meth:`Wiring.closed_files`; ``raw`` holds the bytes stdout and stderr carried
    (``None`` for one that is not a pipe)."""
    slots = popen.__dict__
    for name in names:
        slots[name] = wiring.made[name] = closed[name]
    if not popen._communication_started:
        return
    outputs: dict[Any, list[bytes]] = {}
    out, err = raw
    if out is not None:
        outputs[closed["stdout"]] = [out]
    if err is not None:
        outputs[closed["stderr"]] = [err]
    popen._fileobj2output = outputs
    if "stdin" in names:  # as Popen._save_input() keeps it: encoded in text mode
        popen._input = written if input is not None and wiring.text else input
        popen._input_offset = len(written) if written else 0

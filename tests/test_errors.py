"""The public errors: named by their public path, and pickled with their data intact.

pytest shows an exception as ``module.QualName: message`` and pytest-xdist pickles the
exceptions it ships between processes, so both the name and the round trip are part of the
API.
"""

from __future__ import annotations

import pickle
import traceback
from typing import Any

import pytest

import sessiontape
from sessiontape import (
    CassetteError,
    RecordingWarning,
    ReplayedError,
    ReplayMismatch,
    ReplayReport,
    SessiontapeError,
    TruncatedPayloadError,
    UnrecordedCallError,
    UsageError,
)


def _report() -> ReplayReport:
    return ReplayReport(
        cassette="cassettes/run.jsonl",
        run_id="r1",
        ok=False,
        strict=True,
        loaded=2,
        consumed=1,
        unconsumed=1,
        extra=0,
    )


#: One instance of every public exception, with the attributes it must keep.
ERRORS: list[tuple[BaseException, dict[str, Any]]] = [
    (SessiontapeError("something failed"), {}),
    (UsageError("pass a list"), {}),
    (CassetteError("bad line", path="a.jsonl", line=3), {"path": "a.jsonl", "line": 3}),
    (
        TruncatedPayloadError(seq=4, field="stdout", digest="sha256:ab"),
        {"seq": 4, "field": "stdout", "digest": "sha256:ab"},
    ),
    (
        UnrecordedCallError("no answer", boundary="process", worker="w1"),
        {"boundary": "process", "worker": "w1"},
    ),
    (ReplayedError("app.Boom", "it broke"), {"type_name": "app.Boom", "message": "it broke"}),
    (ReplayMismatch(_report()), {"report": _report()}),
    (RecordingWarning("disk full"), {}),
]


@pytest.mark.parametrize(("error", "attributes"), ERRORS, ids=[type(e).__name__ for e, _ in ERRORS])
def test_named_by_the_public_path(error: BaseException, attributes: dict[str, Any]) -> None:
    cls = type(error)
    assert cls.__module__ == "sessiontape"
    assert getattr(sessiontape, cls.__name__) is cls
    shown = traceback.format_exception_only(cls, error)[-1]
    assert shown.startswith(f"sessiontape.{cls.__name__}: ")


@pytest.mark.parametrize(("error", "attributes"), ERRORS, ids=[type(e).__name__ for e, _ in ERRORS])
def test_pickles_with_its_data(error: BaseException, attributes: dict[str, Any]) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert copy.args == error.args
    for name, value in attributes.items():
        assert getattr(copy, name) == value


def test_the_message_of_a_cassette_error_is_not_formatted_twice() -> None:
    error = CassetteError("bad line", path="a.jsonl", line=3)
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == "a.jsonl:3: bad line"
    assert copy.reason == "bad line"


def test_a_subclass_outside_sessiontape_keeps_its_own_module() -> None:
    class AppError(SessiontapeError):
        pass

    assert AppError.__module__ == __name__

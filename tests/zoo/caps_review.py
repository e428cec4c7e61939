"""Capabilities of reviewing changes: an update or a live re-record left pending, then
decided (``update="pending"``, ``sessiontape.review``).

``review_api`` uses the ``changed`` variant (a request reworded), ``review_live`` the
``new_call`` variant (a new process call, re-recorded live with the program's world).
"""

from __future__ import annotations

import shutil

from sessiontape.cassette import pending_path
from sessiontape.review import decide

from .harness import Cell, cli_json
from .matrix import TOKEN


def review_api(cell: Cell) -> None:
    """``update="pending"`` leaves the tape as it is and its changes beside it, with no
    byte of the token; every id ``pending --json`` lists is accepted; the tape accepted is
    the one ``update=True`` writes, and replays today's code."""
    tape = cell.recorded()
    twin = cell.fresh("twin") / tape.name
    shutil.copyfile(tape, twin)
    before = tape.read_bytes()
    proposed = cell.replay_api(tape, variant="changed", update="pending")
    report = proposed.report
    assert not report.ok
    assert report.pending_to == str(pending_path(tape)), report.render()
    assert tape.read_bytes() == before
    assert TOKEN.encode() not in pending_path(tape).read_bytes()
    code, listed = cli_json("pending", "--json", str(tape))
    assert code == 0
    ids = [c["id"] for c in listed]
    assert ids, "nothing pending"
    [(_, accepted, saved)] = decide("accept", ids, [tape])
    assert sorted(accepted) == sorted(ids)
    assert saved.done
    assert not pending_path(tape).exists()
    in_place = cell.replay_api(twin, variant="changed", update=True)
    assert in_place.report.ok, in_place.report.render()
    assert tape.read_bytes() == twin.read_bytes()
    again = cell.replay_api(tape, variant="changed")
    assert again.report.ok, again.report.render()


def review_live(cell: Cell) -> None:
    """A live re-record left pending: scrubbed before it is pending (no byte of the token
    in the pending file), accepted whole, then replayed with nothing run for real."""
    tape = cell.recorded()
    before = tape.read_bytes()
    live = cell.replay_api(tape, variant="new_call", world=True, live=["process"], update="pending")
    report = live.report
    assert report.pending_to == str(pending_path(tape)), report.render()
    assert "create" in report.pending, report.pending
    assert tape.read_bytes() == before
    assert TOKEN.encode() not in pending_path(tape).read_bytes()
    [(_, _, saved)] = decide("accept", [], [tape], every=True)
    assert saved.done
    replayed = cell.replay_api(tape, variant="new_call")
    assert replayed.report.ok, replayed.report.render()

"""Four deliberate changes to the bundled gardener, applied in a test, never shipped.

- ``fetch``: a new process call in each worker's path, ``git fetch`` before merging;
- ``reword``: a changed agent request, the edit step's ``title`` reworded;
- ``store``: an added store mutation, ``record_attempt(task, 0)`` before completing;
- ``rename``: a renamed store mutation, ``mark_in_progress`` called ``start_work`` today.

Each of the first three may be guarded by :func:`sessiontape.patched` (old tapes keep the
old path) or not (the change every run makes); a rename is never guarded (there is no old
path to keep), so it is not in :data:`ALL`, the changes a tape's markers name.
:func:`changed_gardener` installs the gardener subclass into ``run_session`` for the rest
of the test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest

import sessiontape
from sessiontape.examples.gardener import BacklogStore, Gardener, _orchestrator, _session

FETCH: Final = "fetch-before-merge"
REWORD: Final = "reworded-edit-title"
STORE: Final = "attempt-reset-on-complete"
RENAME: Final = "mark-in-progress-renamed"
ALL: Final = (FETCH, REWORD, STORE)


class _Rewording:
    """The application's agent, asked with today's reworded edit request."""

    def __init__(self, inner: Any, guarded: bool) -> None:
        self._inner = inner
        self._guarded = guarded

    def execute(self, request: dict[str, Any]) -> Any:
        if request.get("step") == "edit" and (not self._guarded or sessiontape.patched(REWORD)):
            request = {**request, "title": f"Tend: {request['title']}"}
        return self._inner.execute(request)


class _Renamed:
    """The backlog as today's code calls it: ``mark_in_progress`` is ``start_work``."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def mark_in_progress(self, *args: Any, **kwargs: Any) -> Any:
        return self._store.start_work(*args, **kwargs)


def changed_gardener(
    monkeypatch: pytest.MonkeyPatch, changes: tuple[str, ...], *, guarded: bool
) -> list[str]:
    """Make ``run_session`` build a gardener with ``changes``; return the list each
    ``git fetch`` the changed code made is noted in (by worker)."""
    fetched: list[str] = []
    if RENAME in changes:
        monkeypatch.setattr(
            BacklogStore, "start_work", BacklogStore.mark_in_progress, raising=False
        )
        renamed = tuple("start_work" if m == "mark_in_progress" else m for m in _session.MUTATIONS)
        monkeypatch.setattr(_session, "MUTATIONS", renamed)

    def on(change: str) -> bool:
        return change in changes and (not guarded or sessiontape.patched(change))

    class Changed(Gardener):
        def __init__(self, *, agent: Any, store: Any, **kwargs: Any) -> None:
            if REWORD in changes:
                agent = _Rewording(agent, guarded)
            if RENAME in changes:
                store = _Renamed(store)
            super().__init__(agent=agent, store=store, **kwargs)

        def _merge(self, name: str, task_id: str, worktree: Path) -> str:
            if on(FETCH):
                # One worker at a time, as the gardener's own `git worktree` calls: a fetch
                # reads every worktree's HEAD, and fails on one that another worker is
                # adding or removing ("bad object worktrees/NAME/HEAD"); FETCH_HEAD is
                # one file for every worker too.
                with self._holding(self._worktree_lock):
                    _orchestrator._git(self.runner, self.repo, "fetch", "-q", ".", "main")
                fetched.append(name)
            commit = super()._merge(name, task_id, worktree)
            if on(STORE):
                self.store.record_attempt(task_id, 0)
            return commit

    monkeypatch.setattr(_session, "Gardener", Changed)
    return fetched

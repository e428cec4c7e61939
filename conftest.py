"""Replays the regression corpus in ``cassettes/`` against today's example orchestrator.

``pytest cassettes/`` collects every cassette as a test item and hands it to the
``sessiontape_replay`` hook, here the gardener's own (:func:`replay_hook`: it runs the
bundled gardener orchestrator against a gardener cassette and leaves other cassettes to
others). To add a regression tape, record a scenario (see ``cassettes/README.md``).
"""

from __future__ import annotations

from sessiontape.examples.gardener import replay_hook as sessiontape_replay

__all__ = ["sessiontape_replay"]

"""``python -m sessiontape.cli``: the ``sessiontape`` command."""

from __future__ import annotations

from ._main import main

raise SystemExit(main())

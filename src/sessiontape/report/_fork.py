"""What a fork did, as data (the report's ``fork``) and as one line (the summary).

A fork replays a tape exactly up to a call, gives that call another answer (or runs it
live), then serves from the tape each later call that asks what a recorded call asked and
runs the others live. :class:`ForkResult` says where it parted, how many calls after that
the tape answered, how many ran live, and where the branch was written; or, when
``--sessiontape-fork-no-live`` stopped it, the call the tape could not answer.
"""

from __future__ import annotations

import msgspec

__all__ = ["ForkResult"]


class ForkResult(msgspec.Struct, kw_only=True):
    """One fork of one tape (see the module's documentation)."""

    #: The tape forked (its path as given).
    tape: str
    #: The seq of the call where the branch parted from the tape.
    seq: int
    #: Whether that call was given an answer (``False``: it ran live).
    answered_at_fork: bool
    #: The calls after the fork that the tape answered (a recorded call asked the same).
    from_tape: int = 0
    #: The calls after the fork that ran live (the tape had no answer for them).
    live: int = 0
    #: Where the branch tape was written (``None``: nothing was written).
    written: str | None = None
    #: The seqs, in the branch tape, of the calls that ran live.
    ran_live: list[int] = []
    #: The call the tape could not answer, when live calls were forbidden or could not
    #: help (``None``: the fork did not stop): worker, boundary and what it asked.
    stopped: str | None = None
    #: What to do instead of running that call live, where that cannot help (a turn of a
    #: conversation); ``None``: run it live.
    advice: str | None = None

    def line(self) -> str:
        """The summary line: where it forked, what answered the calls after, what was
        written (or where it stopped)."""
        how = "answer given" if self.answered_at_fork else "ran live"
        head = f"forked {self.tape} at seq {self.seq} ({how})"
        if self.stopped is not None:
            return (
                f"{head}: stopped at a call the tape cannot answer ({self.stopped}); "
                f"{self.from_tape} call(s) after the fork answered by the tape, nothing "
                f"written. {self.advice or 'Run it live: leave out --sessiontape-fork-no-live.'}"
            )
        written = f"written to {self.written}" if self.written else "nothing written"
        return (
            f"{head}: {self.from_tape} call(s) after it answered by the tape, "
            f"{self.live} ran live; {written}"
        )

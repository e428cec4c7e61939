"""The order of verify-boundary calls: a wait ends when the call waited for cannot come.

``replayer.Sequencer`` lets a store's calls through in their recorded order. Its timeout is
set to an hour here: a call that waits for it fails the test at the join (which waits with
a timeout only a hang reaches), never by a measured time.
"""

from __future__ import annotations

import threading

from sessiontape.replayer._order import Sequencer

HOUR = 3600.0
HANG = 60.0


def _waiting(
    sequencer: Sequencer, seqs: list[int]
) -> tuple[list[threading.Thread], dict[int, int | None]]:
    """A thread per seq, each waiting for its turn; what each ``wait_turn`` returned."""
    returned: dict[int, int | None] = {}
    started = threading.Barrier(len(seqs) + 1)

    def wait(seq: int) -> None:
        started.wait()
        returned[seq] = sequencer.wait_turn(seq)

    threads = [threading.Thread(target=wait, args=(s,), daemon=True) for s in seqs]
    for thread in threads:
        thread.start()
    started.wait()
    return threads, returned


def _joined(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(HANG)
        assert not thread.is_alive(), f"{thread.name} still waits for its turn"


def test_calls_waiting_behind_an_abandoned_call_give_up_the_order_once() -> None:
    sequencer = Sequencer([10, 20, 30, 40], HOUR)
    sequencer.done(10)
    # 30 and 40 wait behind 20; the worker that would have made 20 stopped.
    threads, returned = _waiting(sequencer, [30, 40])
    sequencer.abandon([20, 999])  # 999 is another store's: ignored
    _joined(threads)
    # One of them reports the call that never came; the other runs as it comes.
    assert sorted(returned.values(), key=str) == [20, None]
    assert sequencer.broken


def test_an_abandoned_call_already_passed_changes_nothing() -> None:
    sequencer = Sequencer([10, 20, 30], HOUR)
    sequencer.done(10)
    sequencer.done(20)
    sequencer.abandon([10, 20])
    assert sequencer.wait_turn(30) is None
    assert not sequencer.broken


def test_a_call_abandoned_before_anyone_waits_for_it_ends_the_wait_at_once() -> None:
    sequencer = Sequencer([10, 20, 30], HOUR)
    sequencer.abandon([20])
    sequencer.done(10)
    threads, returned = _waiting(sequencer, [30])
    _joined(threads)
    assert returned == {30: 20}

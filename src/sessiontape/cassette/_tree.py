"""The parent links of a recording as a tree, and which entries are boundary calls."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Final

from ._entries import AgentTurn, Call, Entry, ProcessCall, StoreMutation

__all__ = ["CallTree", "is_call"]

_CALL_TYPES: Final = (ProcessCall, AgentTurn, StoreMutation, Call)


def is_call(entry: Entry) -> bool:
    """Whether ``entry`` is a boundary call (not session metadata)."""
    return isinstance(entry, _CALL_TYPES)


class CallTree:
    """The parent links of a recording as a tree: children, depths and top-level roots.

    A parent that is not in the recording (a call still open when the session crashed, or
    one cut out of a slice) makes its child a root: the tree only links what is there.
    """

    __slots__ = ("children", "depth", "root_of")

    def __init__(self, entries: Iterable[Entry]) -> None:
        links = [(entry.seq, entry.parent) for entry in entries]
        self._link([seq for seq, _ in links], [parent for _, parent in links])

    @classmethod
    def of(cls, seqs: Sequence[int], parents: Sequence[int | None]) -> CallTree:
        """The tree of the entries with these seqs and parents (in seq order)."""
        tree = cls.__new__(cls)
        tree._link(seqs, parents)
        return tree

    def _link(self, seqs: Sequence[int], parents: Sequence[int | None]) -> None:
        # Every entry a root at depth 0 (in C), then those with a parent linked to it.
        self.children: dict[int, list[int]] = {}
        self.depth: dict[int, int] = dict.fromkeys(seqs, 0)
        self.root_of: dict[int, int] = dict(zip(seqs, seqs, strict=True))
        depth, root_of, children = self.depth, self.root_of, self.children
        # Seq order puts every parent before its children (seqs are reserved at call start).
        for seq, parent in zip(seqs, parents, strict=True):
            if parent is not None and parent < seq and parent in depth:
                children.setdefault(parent, []).append(seq)
                depth[seq] = depth[parent] + 1
                root_of[seq] = root_of[parent]

    def subtree(self, seq: int) -> Iterator[int]:
        """``seq`` and every seq nested under it, at any depth."""
        stack = [seq]
        while stack:
            current = stack.pop()
            yield current
            stack.extend(self.children.get(current, ()))

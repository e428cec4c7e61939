"""Values the program makes up: noise on every path, and correlation into the answers.

A program sends a value it made up today (an id) through each field a request has, on
each way a request is made; the child (or the boundary) echoes it. On replay the request
must match with the noise configured, and the answer must carry today's value. In the
``mask`` column the field also differs by a word no correlation covers (only the mask
makes it match) and the id is long enough to be found as made up; in the ``pattern``
column the id is too short to be found so (only the pattern names it).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

import sessiontape
from sessiontape import MismatchKind, Noise, ProcessCall

from ._reverse import talk

PY = sys.executable
PATTERN = (r"id-[0-9a-f]{4}\b", "id-X")
ECHO = {
    "argv": "import sys; print(sys.argv[1])",
    "env": "import os; print(os.environ['MADE_UP'])",
    "cwd": "import os; print(os.path.basename(os.getcwd()))",
    "input": "import sys; print(sys.stdin.read().strip())",
    "chunks": "import sys\nfor line in sys.stdin: print('ack', line.strip(), flush=True)",
}
MASKS = {
    "argv": "process.argv[3]",
    "env": "process.env.MADE_UP",
    "cwd": "process.cwd",
    "input": "process.input",
    "chunks": "process.chunks[0].data",
    "args": "ids.args[0]",
}


def made_up(column: str, word: str) -> tuple[str, str]:
    """The text sent and the id in it: in the mask column a word and an id found as made
    up (eight hex digits, one of them a digit); in the pattern column a four-digit id."""
    if column == "mask":
        made = f"id-{secrets.token_hex(4)[:7]}0"
        return f"{word} {made}", made
    made = f"id-{secrets.token_hex(2)}"
    return made, made


def request(field: str, text: str, work: Path) -> dict[str, Any]:
    """``Popen``-style arguments that carry ``text`` in ``field``."""
    argv = [PY, "-c", ECHO[field]]
    call: dict[str, Any] = {"argv": argv, "cwd": None, "env": None, "input": None}
    if field == "argv":
        argv.append(text)
    elif field == "env":
        call["env"] = {**os.environ, "MADE_UP": text}
    elif field == "cwd":
        call["cwd"] = work / text
        call["cwd"].mkdir()
    else:
        call["input"] = text + "\n"
    return call


def by_patch(tape: Any, field: str, text: str, work: Path) -> str:
    call = request(field, text, work)
    if field == "chunks":
        proc = subprocess.Popen(
            call["argv"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        answers = []
        for line in (text, "and a second line"):
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            answers.append(proc.stdout.readline())
        proc.stdin.close()
        proc.wait()
        return answers[0]
    done = subprocess.run(
        call["argv"], cwd=call["cwd"], env=call["env"], input=call["input"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


async def _by_asyncio(field: str, text: str, work: Path) -> str:
    call = request(field, text, work)
    proc = await asyncio.create_subprocess_exec(
        *call["argv"], cwd=call["cwd"], env=call["env"],
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None
    assert proc.stdout is not None
    if field == "chunks":
        answers = []
        for line in (text, "and a second line"):
            proc.stdin.write(line.encode() + b"\n")
            await proc.stdin.drain()
            answers.append(await proc.stdout.readline())
        proc.stdin.close()
        await proc.wait()
        return answers[0].decode()
    out, _ = await proc.communicate(call["input"].encode() if call["input"] else None)
    return out.decode()


def by_asyncio(tape: Any, field: str, text: str, work: Path) -> str:
    return asyncio.run(_by_asyncio(field, text, work))


def by_runner(tape: Any, field: str, text: str, work: Path) -> str:
    call = request(field, text, work)
    runner = tape.process_runner()
    done = runner.run(
        call["argv"], cwd=call["cwd"], env=call["env"], input=call["input"], text=True
    )
    return str(done.stdout)


def by_async_runner(tape: Any, field: str, text: str, work: Path) -> str:
    call = request(field, text, work)

    async def run() -> str:
        runner = tape.async_process_runner()
        done = await runner.run(
            call["argv"], cwd=call["cwd"], env=call["env"], input=call["input"], text=True
        )
        return str(done.stdout)

    return asyncio.run(run())


class Echo:
    def echo(self, text: str) -> str:
        return f"ack {text}"


def by_boundary(tape: Any, field: str, text: str, work: Path) -> str:
    ids = tape.boundary("ids", Echo(), methods=["echo"])
    return str(ids.echo(text))


WAYS: dict[str, Callable[[Any, str, str, Path], str]] = {
    "patch_subprocess": by_patch,
    "patch_subprocess asyncio": by_asyncio,
    "process_runner": by_runner,
    "async_process_runner": by_async_runner,
    "boundary": by_boundary,
}
PATHS = [
    (way, field)
    for way in ("patch_subprocess", "patch_subprocess asyncio")
    for field in ("input", "chunks", "argv", "env", "cwd")
] + [
    (way, field)
    for way in ("process_runner", "async_process_runner")
    for field in ("input", "argv", "env", "cwd")
] + [("boundary", "args")]  # fmt: skip


def round_trip(
    tmp_path: Path, way: str, field: str, column: str, noise: Noise
) -> tuple[str, str, str, str, sessiontape.ReplayReport]:
    """Record with one made-up value, replay with another: both ids and both answers."""
    program = WAYS[way]
    cassette = tmp_path / "tape.jsonl"
    then, now = tmp_path / "then", tmp_path / "now"
    then.mkdir()
    now.mkdir()
    text, then_id = made_up(column, "recorded")
    with sessiontape.record(cassette, roots={"work": str(then)}) as tape, tape.patch_subprocess():
        recorded = program(tape, field, text, then)
    text, today = made_up(column, "today")
    with sessiontape.replay(cassette, noise=noise, roots={"work": str(now)}) as tape:
        with tape.patch_subprocess():
            replayed = program(tape, field, text, now)
        report = tape.finish()
    return then_id, today, recorded, replayed, report


@pytest.mark.parametrize("column", ["mask", "pattern"])
@pytest.mark.parametrize(("way", "field"), PATHS)
def test_noise_applies_and_the_made_up_value_follows(
    tmp_path: Path, way: str, field: str, column: str
) -> None:
    noise = Noise(masks=[MASKS[field]]) if column == "mask" else Noise(patterns=[PATTERN])
    then_id, today, recorded, replayed, report = round_trip(tmp_path, way, field, column, noise)
    assert report.ok, report.render()
    assert then_id in recorded
    # The recorded answer, with today's value in place of the recorded one.
    assert replayed == recorded.replace(then_id.removeprefix("id-"), today.removeprefix("id-"))
    how = {c.how for c in report.correlations}
    assert how == ({"detected"} if column == "mask" else {"pattern"})
    assert all(c.served for c in report.correlations)


# -- the issue's two reproductions -----------------------------------------------------------

REPEAT = [PY, "-c", "import sys; sys.stdout.write(sys.stdin.read())"]
ACK = [PY, "-c", "import sys\nfor l in sys.stdin: print('ack', l.split()[1], flush=True)"]
ISSUE_NOISE = Noise(masks=["process.input"], patterns=[(r"id [0-9a-f]{8}", "id X")])


async def _asyncio_run(argv: list[str], data: str) -> str:
    pipe = asyncio.subprocess.PIPE
    proc = await asyncio.create_subprocess_exec(*argv, stdin=pipe, stdout=pipe)
    out, _ = await proc.communicate(data.encode())
    return out.decode()


def send(tape: Any, way: str, argv: list[str], data: str) -> str:
    """``data`` to ``argv``'s stdin, its stdout back, the way ``way`` says."""
    if way == "patch_subprocess":
        return subprocess.run(argv, input=data, capture_output=True, text=True).stdout
    if way == "patch_subprocess asyncio":
        return asyncio.run(_asyncio_run(argv, data))
    if way == "process_runner":
        return str(tape.process_runner().run(argv, input=data, text=True).stdout)

    async def run() -> str:
        return str((await tape.async_process_runner().run(argv, input=data, text=True)).stdout)

    return asyncio.run(run())


def first_reproduction(tape: Any, way: str) -> tuple[str, str]:
    data = f"id {os.urandom(4).hex()}\n"
    return data, send(tape, way, REPEAT, data)


async def _asyncio_ack(rid: str) -> str:
    pipe = asyncio.subprocess.PIPE
    proc = await asyncio.create_subprocess_exec(*ACK, stdin=pipe, stdout=pipe)
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(f"req {rid}\n".encode())
    await proc.stdin.drain()
    ack = (await proc.stdout.readline()).decode().split()[1]
    proc.stdin.close()
    await proc.wait()
    return ack


def second_reproduction(tape: Any, way: str) -> tuple[str, str]:
    rid = os.urandom(4).hex()
    if way == "patch_subprocess":
        pipe = subprocess.PIPE
        p = subprocess.Popen(ACK, stdin=pipe, stdout=pipe, text=True)
        assert p.stdin is not None
        assert p.stdout is not None
        p.stdin.write(f"req {rid}\n")
        p.stdin.flush()
        ack = p.stdout.readline().split()[1]
        p.stdin.close()
        p.wait()
        return rid, ack
    if way == "patch_subprocess asyncio":
        return rid, asyncio.run(_asyncio_ack(rid))
    return rid, send(tape, way, ACK, f"req {rid}\n").split()[1]


def replayed(
    tmp_path: Path, program: Callable[[Any], Any], noise: Noise | None = None, **record: Any
) -> tuple[Any, Any, sessiontape.ReplayReport]:
    cassette = tmp_path / "issue.jsonl"
    with sessiontape.record(cassette, **record) as tape, tape.patch_subprocess():
        recorded = program(tape)
    with sessiontape.replay(cassette, noise=noise) as tape:
        with tape.patch_subprocess():
            today = program(tape)
        report = tape.finish()
    return recorded, today, report


REPRODUCED = [
    "patch_subprocess",
    "patch_subprocess asyncio",
    "process_runner",
    "async_process_runner",
]


@pytest.mark.parametrize("way", REPRODUCED)
def test_noise_on_stdin_replays_green_on_every_path(tmp_path: Path, way: str) -> None:
    recorded, today, report = replayed(tmp_path, lambda t: first_reproduction(t, way), ISSUE_NOISE)
    assert report.ok, report.render()
    assert recorded[0] == recorded[1]
    assert today[0] == today[1] != recorded[1]  # the echo carries today's id


@pytest.mark.parametrize("way", REPRODUCED)
def test_an_echoed_id_is_todays_with_no_noise(tmp_path: Path, way: str) -> None:
    recorded, today, report = replayed(tmp_path, lambda t: second_reproduction(t, way))
    assert report.ok, report.render()
    rid, ack = today
    assert ack == rid != recorded[0]
    (followed,) = report.correlations
    assert (followed.recorded, followed.today, followed.how) == (recorded[0], rid, "detected")
    assert followed.served


@pytest.mark.parametrize("way", ["patch_subprocess", "patch_subprocess asyncio"])
def test_stdin_kept_in_the_sidecar_is_compared_as_text(tmp_path: Path, way: str) -> None:
    # Found by the zoo (the stream program with the SDK's ids, its tape recorded with a
    # small max_inline_bytes): stdin the sidecar kept was compared by its digest, so the
    # id the program made up never followed and the conversation stalled.
    recorded, today, report = replayed(
        tmp_path, lambda t: second_reproduction(t, way), max_inline_bytes=8
    )
    assert any((tmp_path / "issue.jsonl.blobs").iterdir())  # the stdin went there
    assert report.ok, report.render()
    rid, ack = today
    assert ack == rid != recorded[0]
    (followed,) = report.correlations
    assert (followed.recorded, followed.today, followed.how) == (recorded[0], rid, "detected")
    # And noise applies to it as to stdin kept inline.
    recorded, today, report = replayed(
        tmp_path, lambda t: first_reproduction(t, way), ISSUE_NOISE, max_inline_bytes=8
    )
    assert report.ok, report.render()
    assert today[0] == today[1] != recorded[1]


# -- what the report suggests, and what is never correlated -----------------------------------


def test_the_mask_the_report_suggests_for_a_chunk_works_when_pasted(tmp_path: Path) -> None:
    cassette = tmp_path / "talk.jsonl"
    with sessiontape.record(cassette) as tape, tape.patch_subprocess():
        talk(["abc", "hello"])
    with sessiontape.replay(cassette) as tape:
        with tape.patch_subprocess():
            talk(["abc", "howdy"])
        first = tape.finish()
    (mismatch,) = first.mismatches
    assert mismatch.mask_paths == ["process.chunks[2].data"]
    with sessiontape.replay(cassette, noise=Noise(masks=mismatch.mask_paths)) as tape:
        with tape.patch_subprocess():
            answers = talk(["abc", "howdy"])
        again = tape.finish()
    assert again.ok, again.render()
    assert answers == ["cba\n", "olleh\n"]
    assert again.correlations == []  # a word is never taken for a made-up value


ECHO_LINE = [PY, "-c", "import sys; print(sys.argv[1])"]
QUIET = [PY, "-c", "print('ok')"]


@pytest.mark.parametrize(
    ("argv", "then", "now"),
    [
        (ECHO_LINE, "paint the fence blue", "paint the fence pink"),  # a word changed
        (ECHO_LINE, "build-20240501", "build-20240502"),  # a number moved by one
        (QUIET, f"id-{'1a2b3c4d'}", f"id-{'9f8e7d6c'}"),  # made up, but nobody echoes it
    ],
)
def test_what_is_not_made_up_and_echoed_stays_a_mismatch(
    tmp_path: Path, argv: list[str], then: str, now: str
) -> None:
    def program(text: str) -> Callable[[Any], str]:
        return lambda tape: subprocess.run([*argv, text], capture_output=True, text=True).stdout

    cassette = tmp_path / "t.jsonl"
    with sessiontape.record(cassette) as tape, tape.patch_subprocess():
        recorded = program(then)(tape)
    with sessiontape.replay(cassette) as tape:
        with tape.patch_subprocess():
            today = program(now)(tape)
        report = tape.finish()
    assert today == recorded
    (mismatch,) = report.mismatches
    assert mismatch.kind is MismatchKind.ARGUMENT_MISMATCH
    assert mismatch.mask_paths == ["process.argv[3]"]
    assert report.correlations == []


class Registry:
    """Our own state: a verify boundary runs it for real and compares its results."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def add(self, name: str) -> dict[str, Any]:
        self.names.append(name)
        return {"added": name, "count": len(self.names)}


def test_a_verify_boundarys_result_echoing_a_made_up_value_compares_with_todays(
    tmp_path: Path,
) -> None:
    def program(tape: Any) -> tuple[str, dict[str, Any]]:
        name = f"run-{secrets.token_hex(4)[:7]}0"
        registry = tape.boundary("registry", Registry(), methods=["add"], kind="verify")
        return name, registry.add(name)

    recorded, today, report = replayed(tmp_path, program)
    assert report.ok, report.render()
    assert today[1] == {"added": today[0], "count": 1} != recorded[1]
    (followed,) = report.correlations
    assert (followed.boundary, followed.path, followed.how) == ("registry", "args[0]", "detected")


# -- a live re-record keeps the recorded made-up values ----------------------------------------

WORLD = [PY, "-c", "import os; print(os.urandom(4).hex() + '0')"]


def ack_and_world(tape: Any) -> tuple[str, str, str]:
    """An id made up and echoed (second reproduction), and a value the world gives (a
    process's answer that differs every run), sent on to be echoed."""
    rid, ack = second_reproduction(tape, "patch_subprocess")
    given = subprocess.run(WORLD, capture_output=True, text=True, check=True).stdout.split()[0]
    return rid, ack, send(tape, "patch_subprocess", ACK, f"req {given}\n").split()[1]


def test_a_live_re_record_puts_the_made_up_values_back(tmp_path: Path) -> None:
    cassette = tmp_path / "live.jsonl"
    with sessiontape.record(cassette) as tape, tape.patch_subprocess():
        recorded = ack_and_world(tape)

    def processes() -> list[ProcessCall]:
        calls = sessiontape.load(cassette).calls
        return [c for c in calls if isinstance(c, ProcessCall)]

    acked = msgspec.to_builtins(processes()[0])
    for _ in range(2):
        with sessiontape.replay(cassette, live=["process"], update=True) as tape:
            with tape.patch_subprocess():
                today = ack_and_world(tape)
            report = tape.finish()
        assert report.ok, report.render()
        assert today[0] == today[1] != recorded[0]  # the live child echoed today's id
        calls = processes()
        # The made-up id's call is the recorded one (its time too: it asked the same)...
        assert msgspec.to_builtins(calls[0]) == acked
        # ...while the value the world gave is today's, where the program sent it on.
        assert today[2] != recorded[2]
        assert today[2] in json.dumps(msgspec.to_builtins(calls[2]))
    with sessiontape.replay(cassette) as tape, tape.patch_subprocess():
        again = ack_and_world(tape)
    assert tape.report is not None
    assert tape.report.ok, tape.report.render()
    assert again[0] == again[1]

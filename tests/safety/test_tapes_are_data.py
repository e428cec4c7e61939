"""Tapes are data: loading, showing, validating and replaying never import what a tape names."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import sessiontape
from sessiontape import ErrorInfo, ReplayedError
from sessiontape.cli import main
from sessiontape.replayer import rebuild_error

from ._tapes import TS, end, header, process, tape


@pytest.fixture
def evil(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A real module on sys.path that writes a marker file when it is imported."""
    name = f"sessiontape_evil_{uuid.uuid4().hex}"
    marker = tmp_path / "imported.marker"
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / f"{name}.py").write_text(
        "from pathlib import Path\n"
        f"Path({str(marker)!r}).write_text('imported')\n"
        "class Thing:\n    pass\n"
        "class Boom(Exception):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    return name, marker


def crafted_tape(module: str) -> bytes:
    """A tape whose every type name points into ``module``."""
    boom = {"type": f"{module}.Boom", "message": "boom"}
    common = {"ts_ns": TS, "mono_ns": 5}
    return tape(
        header(config={"__class__": f"{module}.Thing", "$repr": f"<{module}.Thing>"}),
        process(1, spawn_error={"type": f"{module}.Boom", "message": "no"}, returncode=None),
        {"kind": "agent_turn", "seq": 2, **common, "args": ["go"], "result": {"x": 1},
         "result_type": f"{module}.Thing"},
        {"kind": "agent_turn", "seq": 3, **common, "args": ["fail"], "error": boom},
        {"kind": "call", "seq": 4, **common, "boundary": "http", "method": "get",
         "args": ["/"], "error": boom},
        {"kind": "error", "seq": 5, **common, "type": f"{module}.Boom", "message": "crash",
         "traceback": "Traceback ..."},
    )  # fmt: skip


def test_nothing_a_tape_names_is_imported(
    evil: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module, marker = evil
    path = tmp_path / "crafted.jsonl"
    path.write_bytes(crafted_tape(module))
    out = tmp_path / "out"
    out.mkdir()

    recording = sessiontape.load(path)
    sessiontape.loads(path.read_bytes())
    assert sessiontape.is_cassette(path)
    commands = [
        ["show", str(path)],
        ["validate", str(path)],
        ["stats", str(path)],
        ["export", str(path), "-o", str(out / "otlp.json")],
        ["report", str(path), "-o", str(out / "report.html")],
        ["diff", str(path), str(path)],
        ["slice", str(path), "--worker", "main", "-o", str(out / "slice.jsonl")],
        ["scrub", str(path), "-o", str(out / "scrubbed.jsonl")],
    ]
    codes = [main(args) for args in commands]
    capsys.readouterr()
    assert codes == [0, 0, 0, 0, 0, 0, 0, 0]

    seen: list[Any] = []
    with sessiontape.replay(recording) as replay_tape:
        runner = replay_tape.process_runner()
        agent = replay_tape.agent()
        http = replay_tape.boundary("http", methods=["get"])
        for call in (
            lambda: runner.run(["echo", "1"]),
            lambda: agent.execute("go"),
            lambda: agent.execute("fail"),
            lambda: http.get("/"),
        ):
            try:
                seen.append(call())
            except Exception as exc:
                seen.append((type(exc), str(exc)))
        with pytest.raises(ReplayedError):
            raise rebuild_error(recording.error)  # type: ignore[arg-type]
        replay_tape.finish()
    assert seen == [
        (ReplayedError, f"{module}.Boom: no"),
        {"x": 1},  # plain data: the recorded result type is not imported
        (ReplayedError, f"{module}.Boom: boom"),
        (ReplayedError, f"{module}.Boom: boom"),
    ]
    assert not marker.exists()
    assert module not in sys.modules


def test_a_registered_type_is_rebuilt(evil: tuple[str, Path]) -> None:
    module, marker = evil
    mod = __import__(module)  # the application imports its own code, then registers it
    marker.unlink()
    sessiontape.register_type(mod.Boom)
    try:
        error = rebuild_error(ErrorInfo(type=f"{module}.Boom", message="boom"))
        assert type(error) is mod.Boom
        assert str(error) == "boom"
    finally:
        sessiontape.unregister_type(mod.Boom)
    again = rebuild_error(ErrorInfo(type=f"{module}.Boom", message="boom"))
    assert type(again) is ReplayedError
    assert not marker.exists()


@pytest.mark.parametrize(
    "name", ["SystemExit", "KeyboardInterrupt", "GeneratorExit", "BaseException", "print",
             "object", "__import__", "os.system", "builtins.ValueError", "subprocess.Popen"]
)  # fmt: skip
def test_only_exceptions_of_the_allowlist_are_rebuilt(name: str) -> None:
    error = rebuild_error(ErrorInfo(type=name, message="3"))
    assert type(error) is ReplayedError
    assert (error.type_name, error.message) == (name, "3")


def test_a_recorded_system_exit_is_never_raised_for_real(tmp_path: Path) -> None:
    data = tape(
        header(),
        process(1, spawn_error={"type": "SystemExit", "message": "0"}, returncode=None),
        {"kind": "agent_turn", "seq": 2, "ts_ns": TS, "mono_ns": 5, "args": [],
         "error": {"type": "KeyboardInterrupt", "message": ""}},
        end(3),
    )  # fmt: skip
    with sessiontape.replay(sessiontape.loads(data)) as replay_tape:
        with pytest.raises(ReplayedError, match=r"^SystemExit: 0$"):
            replay_tape.process_runner().run(["echo", "1"])
        with pytest.raises(ReplayedError, match=r"^KeyboardInterrupt: $"):
            replay_tape.agent().execute()
        assert replay_tape.finish().ok


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [
        (ValueError("bad"), ValueError("bad")),
        (KeyError("k"), KeyError("k")),
        (FileNotFoundError(2, "No such file or directory", "x"), None),
        (subprocess.CalledProcessError(3, ["git", "x"]), None),
        (subprocess.CalledProcessError(-9, "sh"), None),
        (subprocess.TimeoutExpired(["sleep", "9"], 1.5), None),
        (subprocess.SubprocessError("odd"), None),
    ],
)
def test_the_builtin_and_subprocess_families_are_rebuilt(
    recorded: Exception, expected: Exception | None
) -> None:
    info = sessiontape.scrub.error_info(recorded)
    rebuilt = rebuild_error(info)
    assert type(rebuilt) is type(recorded)
    assert str(rebuilt) == str(recorded)
    if isinstance(recorded, subprocess.CalledProcessError):
        assert rebuilt.returncode == recorded.returncode  # type: ignore[attr-defined]
    if isinstance(recorded, subprocess.TimeoutExpired):
        assert rebuilt.timeout == recorded.timeout  # type: ignore[attr-defined]
    if isinstance(recorded, OSError):
        assert (rebuilt.errno, rebuilt.filename) == (2, "x")  # type: ignore[attr-defined]
    if expected is not None:
        assert rebuilt.args == expected.args


def test_register_type_refuses_what_is_not_a_class() -> None:
    with pytest.raises(sessiontape.UsageError, match=r"^register_type\(\) takes a class, got 3\.$"):
        sessiontape.register_type(3)  # type: ignore[type-var]

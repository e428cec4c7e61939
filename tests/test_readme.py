"""The README runs: every program and command in it is run, or says why not.

A README that drifts from the product is a defect, so each fenced block is one of:

- a ```python block: a complete program, run as a script in the README's sandbox
  project (below), which must exit 0; or, when an HTML comment on the line before it says
  ``<!-- file: NAME -->``, a file of that project; or, after ``<!-- fragment: REASON -->``,
  a fragment of a program: it must compile, and every ``sessiontape.NAME`` it names must
  be public and every ``tape.NAME`` a member of every tape;
- a ```sh block: commands run with ``sh -e`` in a fresh copy of the sandbox, which must exit
  0; or, after ``<!-- not run: REASON -->``, commands whose programs, subcommands, options and
  nox sessions must exist (so are the ``run:`` commands of a ```yaml block);
- a ```json block that starts with a ``session_start`` entry: a cassette, which must load;
- anything else (```text output, a JSON excerpt): shown, not run.

The sandbox project is a folder holding the bundled gardener's corpus in ``cassettes/``, a
``conftest.py`` with its replay hook, and the README's ``file:`` blocks (``example.py``, the
Recording section's program, which the others import). Its commands find the
``sessiontape``, ``pytest`` and ``nox`` of this interpreter first on the PATH.
"""

from __future__ import annotations

import ast
import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import sessiontape
from sessiontape.tape import Tape

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CORPUS = ROOT / "cassettes"
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
_FENCED = re.compile(
    r"^(?:(?P<pad> *)<!-- (?P<marker>fragment|file|not run): (?P<arg>[^\n]*?) -->\n)?"
    r"(?P<indent> *)```(?P<lang>\w*)\n(?P<body>.*?)^(?P=indent)```$",
    re.S | re.M,
)
#: At most this many python blocks may be fragments: a README of fragments runs nothing.
MAX_FRAGMENTS = 7


@dataclass(frozen=True)
class Block:
    """One fenced block of the README."""

    line: int
    lang: str
    marker: str | None
    arg: str
    body: str

    def __str__(self) -> str:
        return f"README.md:{self.line}"


def _blocks() -> list[Block]:
    text = README.read_text(encoding="utf-8")
    found = []
    for match in _FENCED.finditer(text):
        line = text.count("\n", 0, match.start("indent")) + 1
        body = textwrap.dedent(match["body"])
        found.append(Block(line, match["lang"], match["marker"], match["arg"] or "", body))
    return found


BLOCKS = _blocks()


def _of(lang: str, marker: str | None) -> list[Block]:
    return [b for b in BLOCKS if b.lang == lang and b.marker == marker]


def test_every_block_is_run_or_says_why_not() -> None:
    text = README.read_text(encoding="utf-8")
    assert text.count("```") == 2 * len(BLOCKS), "a fence the pattern did not pair"
    assert text.count("<!-- ") == sum(b.marker is not None for b in BLOCKS), (
        "a marker that is not on the line before a block"
    )
    kinds = {(b.lang, b.marker) for b in BLOCKS if b.marker is not None}
    assert kinds <= {("python", "fragment"), ("python", "file"), ("sh", "not run")}
    assert all(b.arg.strip() for b in BLOCKS if b.marker is not None)
    assert len(_of("python", "fragment")) <= MAX_FRAGMENTS
    assert _of("python", None), "no program of the README runs"
    assert _of("sh", None), "no command of the README runs"


# -- the sandbox --------------------------------------------------------------------------


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != sessiontape.ENV_VAR}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """A fresh copy of the README's project (see the module's documentation)."""
    project = tmp_path / "project"
    shutil.copytree(CORPUS, project / "cassettes", ignore=shutil.ignore_patterns("*.md"))
    (project / "conftest.py").write_text(
        "from sessiontape.examples.gardener import replay_hook as sessiontape_replay\n",
        encoding="utf-8",
    )
    for block in _of("python", "file"):
        (project / block.arg).write_text(block.body, encoding="utf-8")
    return project


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=_environment(), capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("block", _of("python", None), ids=str)
def test_a_program_runs(block: Block, sandbox: Path) -> None:
    script = sandbox / f"readme_{block.line}.py"
    script.write_text(block.body, encoding="utf-8")
    done = _run([sys.executable, str(script)], sandbox)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("block", _of("sh", None), ids=str)
def test_commands_run(block: Block, sandbox: Path) -> None:
    done = _run(["sh", "-e", "-c", block.body], sandbox)
    assert done.returncode == 0, done.stdout + done.stderr


# -- what is not run still names what exists ----------------------------------------------


@pytest.mark.parametrize("block", _of("python", "fragment"), ids=str)
def test_a_fragment_names_the_api(block: Block) -> None:
    tree = ast.parse(block.body, filename=str(block))
    surface = {n for n in dir(Tape) if not n.startswith("_")}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "sessiontape":
                assert node.attr in sessiontape.__all__, f"{block}: sessiontape.{node.attr}"
            elif node.value.id == "tape":
                assert node.attr in surface, f"{block}: tape.{node.attr}"


def _commands(block: Block) -> list[list[str]]:
    """The simple commands of a block: its lines (a yaml block's ``run:`` values), cut at
    pipes, ``&&``, ``||`` and redirections, comments dropped."""
    if block.lang == "yaml":
        runs = re.findall(r"- run: (.*?)(?=\n\s*[#-]|\Z)", block.body, re.S)
        lines = [" ".join(run.split()) for run in runs]
    else:
        lines = block.body.splitlines()
    commands: list[list[str]] = []
    for line in lines:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.commenters = "#"
        lexer.whitespace_split = True
        command: list[str] = []
        for token in [*lexer, ";"]:
            if token and set(token) <= set("|&;<>"):
                if command:
                    commands.append(command)
                command = []
            else:
                command.append(token)
    return commands


class Helps:
    """``--help`` of pytest (with the plugin) and of each sessiontape subcommand, and nox's
    list of sessions, as the README's commands meet them (each asked once)."""

    def __init__(self, cwd: Path) -> None:
        self._cwd = cwd
        self._found: dict[tuple[str, ...], subprocess.CompletedProcess[str]] = {}

    def __call__(self, *argv: str) -> subprocess.CompletedProcess[str]:
        if argv not in self._found:
            program = str(Path(sys.executable).parent / argv[0])
            self._found[argv] = _run([program, *argv[1:]], self._cwd)
        return self._found[argv]


@pytest.fixture(scope="module")
def helps(tmp_path_factory: pytest.TempPathFactory) -> Helps:
    return Helps(tmp_path_factory.mktemp("helps"))


@pytest.mark.parametrize(
    "block",
    [b for b in BLOCKS if (b.lang, b.marker) in (("sh", "not run"), ("yaml", None))],
    ids=str,
)
def test_commands_not_run_name_what_exists(block: Block, helps: Helps) -> None:
    checked = 0
    for argv in _commands(block):
        name = os.path.basename(argv[0])
        if name == "nox":
            listed = helps("nox", "--list", "-f", str(ROOT / "noxfile.py")).stdout
            after = argv[argv.index("-s") + 1 :] if "-s" in argv else []
            sessions = list(itertools.takewhile(lambda a: not a.startswith("-"), after))
            assert sessions, f"{block}: {' '.join(argv)}: no session named"
            for session in sessions:
                assert re.search(rf"^[*-] {re.escape(session)}\b", listed, re.M), (
                    f"{block}: no nox session {session!r}"
                )
        elif name in ("sessiontape", "pytest"):
            asked = (
                helps(name, *argv[1:2], "--help")
                if name == "sessiontape"
                else helps("pytest", "--help")
            )
            assert asked.returncode == 0, f"{block}: {' '.join(argv)}: {asked.stderr}"
            for arg in argv[1:]:
                option = arg.split("=", 1)[0]
                if option.startswith("--"):
                    assert option in asked.stdout, f"{block}: {' '.join(argv)}: no {option}"
        else:
            continue
        checked += 1
    assert checked, f"{block}: no command of sessiontape, pytest or nox to check"


# -- cassettes shown are cassettes ---------------------------------------------------------


@pytest.mark.parametrize(
    "block",
    [b for b in BLOCKS if b.lang == "json" and b.body.startswith('{"kind":"session_start"')],
    ids=str,
)
def test_a_cassette_shown_loads(block: Block) -> None:
    recording = sessiontape.loads(block.body.encode(), path=str(block))
    assert len(recording.entries) == len(block.body.splitlines())


# -- the Recording section's program, exactly --------------------------------------------


def _recording_example() -> str:
    """The code block under "## Recording" that says it is complete and runnable."""
    section = README.read_text(encoding="utf-8").split("\n## Recording\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    blocks = _BLOCK.findall(section)
    assert blocks, "the Recording section lost its example"
    return str(blocks[0])


def test_the_store_example_has_no_mode_check() -> None:
    code = _recording_example()
    assert "tape.mode" not in code
    assert "Mode." not in code


def test_the_recording_example_runs_as_written(tmp_path: Path) -> None:
    # As a script of its own, the way a reader runs it (and dataclasses need a real module).
    script = tmp_path / "example.py"
    script.write_text(_recording_example(), encoding="utf-8")
    done = _run([sys.executable, str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("replay of run.jsonl matched: 3 calls served\n")
    assert (tmp_path / "run.jsonl").is_file()


def test_the_claude_agent_sdk_example_runs_as_written(tmp_path: Path) -> None:
    pytest.importorskip("claude_agent_sdk")
    section = README.read_text(encoding="utf-8").split("\n## Recording the Claude Agent SDK\n")[1]
    (code, *_) = _BLOCK.findall(section.split("\n## ", 1)[0])
    script = tmp_path / "sdk_example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith("/sdk.jsonl matched: 1 call served")
    assert lines[3] == "1 value made up today or read between calls, followed:"
    assert lines[4].startswith("  seq 1 (main, process.chunks[0].data): '")
    assert lines[4].endswith("(detected), served in seq 1 chunks[1]")

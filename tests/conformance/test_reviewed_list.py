"""The reviewed list of CPython tests that cannot pass on replay is well-formed: every
entry names a known reason and a detail, and matches a test the interpreter has."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import replay_exclusions  # noqa: E402 (beside this file, not a package)
import run_conformance as run  # noqa: E402


def test_every_entry_gives_a_known_reason_and_a_detail() -> None:
    assert replay_exclusions.EXCLUDED
    for pattern, (reason, detail) in replay_exclusions.EXCLUDED.items():
        assert reason in replay_exclusions.REASONS, pattern
        assert detail.strip(), pattern


@pytest.mark.skipif(
    importlib.util.find_spec("test.test_subprocess") is None,
    reason="this interpreter ships without CPython's test package",
)
def test_every_entry_and_the_quick_slice_match_tests_of_this_interpreter() -> None:
    ids = run.collect(quick=False, keyword=None)
    shorts = [i.split(".", 1)[1] for i in ids]
    unmatched = [
        pattern
        for pattern in replay_exclusions.EXCLUDED
        if not any(run.fnmatch.fnmatchcase(s, pattern) for s in shorts)
    ]
    assert set(unmatched) <= set(replay_exclusions.SOME_VERSIONS), unmatched
    quick = run.collect(quick=True, keyword=None)
    assert 0 < len(quick) < len(ids)
    # The slice is of tests that can pass on replay.
    assert not [i for i in quick if run.excluded(i) is not None]


@pytest.mark.skipif(
    importlib.util.find_spec("test.test_subprocess") is None,
    reason="this interpreter ships without CPython's test package",
)
def test_a_run_that_collects_no_test_fails_as_pytest_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run.main(["--quick", "-k", "no-such-test", "--out", str(tmp_path)]) == 5
    assert "no test collected: nothing was checked" in capsys.readouterr().out


def _without_test_package() -> str | None:
    """An interpreter on this machine that ships without CPython's test package."""
    import shutil
    import subprocess

    for name in ("/usr/bin/python3", shutil.which("python3")):
        if name and Path(name).exists():
            probe = [name, "-c", "import test.test_subprocess"]
            if subprocess.run(probe, capture_output=True, timeout=60, check=False).returncode:
                return name
    return None


@pytest.mark.parametrize(("required", "status"), [(None, 0), ("1", 1)])
def test_an_interpreter_without_its_test_package_fails_only_where_required(
    required: str | None, status: int
) -> None:
    import os
    import subprocess

    python = _without_test_package()
    if python is None:
        pytest.skip("every interpreter here has CPython's test package")
    env = {k: v for k, v in os.environ.items() if k != "SESSIONTAPE_PYTHONS_REQUIRED"}
    if required is not None:
        env["SESSIONTAPE_PYTHONS_REQUIRED"] = required
    done = subprocess.run(
        [python, str(HERE / "run_conformance.py"), "--quick"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == status, done.stdout + done.stderr
    word = "failed (SESSIONTAPE_PYTHONS_REQUIRED=1)" if required else "skipped"
    assert f"conformance: {word}: {python}" in done.stdout

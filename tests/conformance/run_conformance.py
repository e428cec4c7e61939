"""CPython's own subprocess tests, three ways: plain, recording, replaying.

``python tests/conformance/run_conformance.py [--quick] [--out DIR] [--timeout S] [-k SUBSTRING]``

The tests are those of the running interpreter's ``test`` package that drive ``Popen``
on POSIX (``test.test_subprocess``: ProcessTestCase, RunFuncTestCase,
POSIXProcessTestCase, ContextManagerTests, MiscTests) and asyncio's subprocesses
(``test.test_asyncio.test_subprocess`` with the threaded and pidfd child watchers).
Each runs plain; each that passes plain runs again while recording into its own tape
(``patch_subprocess()`` active); each that passes recording is replayed from its tape,
counting the processes started meanwhile (there must be none).

A phase runs in its own interpreter (``_child.py``), which writes one line per test; a
test that writes nothing for ``--timeout`` seconds has hung: its interpreter is killed,
the test counted as hung, and the phase goes on with the next test.

What it finds, it judges:

- recording must be transparent: a test that passes plain and fails (or hangs) while
  recording is a defect;
- replay must not diverge silently: a test that fails on replay must have a report that
  is not ok, or be in the reviewed list ``replay_exclusions.py`` (tests that need what
  only a real child does, each with its reason); a failing replay whose report is ok and
  that the list does not name is a defect;
- replay spawns nothing.

``--quick`` runs the slice of ``replay_exclusions.QUICK`` (a couple of minutes: what CI
runs). The exit status is 1 when a defect was found, 0 otherwise; an interpreter without
its ``test`` package is skipped with a message (status 0), or fails (status 1) with
``SESSIONTAPE_PYTHONS_REQUIRED=1``, as CI runs it. A run that collects no test, or in
which no test passes plain, checked nothing: it fails (status 5, pytest's "no tests
collected", and 1) rather than pass.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import replay_exclusions  # noqa: E402 (beside this script, not a package)

MODULES = ("test.test_subprocess", "test.test_asyncio.test_subprocess")
#: The test classes that drive Popen / asyncio subprocesses on POSIX.
CLASSES = {
    "test.test_subprocess": {
        "ProcessTestCase",
        "RunFuncTestCase",
        "POSIXProcessTestCase",
        "ContextManagerTests",
        "MiscTests",
    },
    "test.test_asyncio.test_subprocess": {
        "SubprocessThreadedWatcherTests",
        "SubprocessPidfdWatcherTests",
    },
}


def _missing_test_package() -> str | None:
    for name in MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            return (
                f"conformance: skipped: {sys.executable} (Python {sys.version.split()[0]}) "
                f"ships without CPython's test package ({name}: {exc}). Install it (Debian: "
                f"apt-get install libpython3.{sys.version_info[1]}-testsuite) or use a CPython "
                "built from source (pyenv)."
            )
    return None


def _ids(suite: unittest.TestSuite) -> Iterator[str]:
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _ids(item)
        else:
            yield item.id()


def collect(quick: bool, keyword: str | None) -> list[str]:
    """The ids of the tests to run, in suite order."""
    ids: list[str] = []
    for name in MODULES:
        module = importlib.import_module(name)
        for cls_name in sorted(CLASSES[name]):
            cls = getattr(module, cls_name, None)
            if cls is None:
                continue
            suite = unittest.defaultTestLoader.loadTestsFromTestCase(cls)
            ids.extend(_ids(suite))
    if quick:
        ids = [i for i in ids if _matches(i, replay_exclusions.QUICK)]
    if keyword:
        ids = [i for i in ids if keyword in i]
    return ids


def _short(test_id: str) -> str:
    """``test_subprocess.ProcessTestCase.test_x``: the id without the ``test.`` package."""
    return test_id.split(".", 1)[1]


def _matches(test_id: str, patterns: Iterable[str]) -> bool:
    short = _short(test_id)
    return any(fnmatch.fnmatchcase(short, pattern) for pattern in patterns)


def excluded(test_id: str) -> tuple[str, str] | None:
    """The reviewed reason why ``test_id`` cannot pass on replay, if it is listed."""
    short = _short(test_id)
    for pattern, reason in replay_exclusions.EXCLUDED.items():
        if fnmatch.fnmatchcase(short, pattern):
            return reason
    return None


def run_phase(
    mode: str, ids: list[str], out: Path, tapes: Path, timeout: float
) -> dict[str, dict[str, Any]]:
    """Run ``ids`` in ``mode`` in child interpreters; every test's last record by id."""
    results: dict[str, dict[str, Any]] = {}
    remaining = list(ids)
    log = open(out / f"{mode}.log", "ab")  # noqa: SIM115 (open for the whole phase)
    lines_path = out / f"{mode}.jsonl"
    started = time.monotonic()
    try:
        while remaining:
            offset = lines_path.stat().st_size if lines_path.exists() else 0
            work = Path(tempfile.mkdtemp(prefix=f"conformance-{mode}-"))
            command = [sys.executable, str(HERE / "_child.py"), mode, str(lines_path)]
            child = subprocess.Popen(
                [*command, str(tapes), *remaining],
                cwd=work,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            current: str | None = None
            last = time.monotonic()
            while True:
                code = child.poll()
                new = _read_from(lines_path, offset)
                if new:
                    offset += sum(len(raw) for raw, _ in new)
                    last = time.monotonic()
                    for _, record in new:
                        if record["event"] == "start":
                            current = record["id"]
                        else:
                            results[record["id"]] = record
                            current = None
                            if record["id"] in remaining:
                                remaining.remove(record["id"])
                if code is not None:
                    break
                if current is not None and time.monotonic() - last > timeout:
                    _kill(child)
                    results[current] = {"id": current, "status": "hung"}
                    break
                time.sleep(0.1)
            if current is not None and current not in results:
                results[current] = {"id": current, "status": "crashed"}
            if current is not None and current in remaining:
                remaining.remove(current)
            if child.returncode is not None and current is None:
                # The interpreter ended without a hang: what it did not run was skipped
                # by a class or module fixture.
                for test_id in remaining:
                    results.setdefault(test_id, {"id": test_id, "status": "skip"})
                remaining = []
    finally:
        log.close()
    print(f"  {mode}: {len(ids)} tests in {time.monotonic() - started:.0f} s", flush=True)
    return results


def _read_from(path: Path, offset: int) -> list[tuple[bytes, dict[str, Any]]]:
    if not path.exists():
        return []
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read()
    found = []
    for raw in data.splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            break  # a line still being written
        found.append((raw, json.loads(raw)))
    return found


def _kill(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, 9)
    child.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the CI slice only")
    parser.add_argument("--out", type=Path, help="where tapes, logs and results go")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds before a hang")
    parser.add_argument("-k", dest="keyword", help="only tests whose id contains this")
    parser.add_argument("--json", type=Path, help="write the summary here as JSON")
    args = parser.parse_args(argv)
    missing = _missing_test_package()
    if missing:
        if os.environ.get("SESSIONTAPE_PYTHONS_REQUIRED") == "1":
            print(missing.replace(": skipped:", ": failed (SESSIONTAPE_PYTHONS_REQUIRED=1):"))
            return 1
        print(missing)
        return 0
    out = args.out or Path(tempfile.mkdtemp(prefix="sessiontape-conformance-"))
    out.mkdir(parents=True, exist_ok=True)
    tapes = out / "tapes"
    ids = collect(args.quick, args.keyword)
    print(f"conformance: Python {sys.version.split()[0]}, {len(ids)} tests, output in {out}")
    if not ids:
        print("conformance: no test collected: nothing was checked")
        return 5
    plain = run_phase("plain", ids, out, tapes, args.timeout)
    passed_plain = [i for i in ids if plain.get(i, {}).get("status") == "pass"]
    record = run_phase("record", passed_plain, out, tapes, args.timeout)
    passed_record = [i for i in passed_plain if record.get(i, {}).get("status") == "pass"]
    replay = run_phase("replay", passed_record, out, tapes, args.timeout)
    passed_replay = [i for i in passed_record if replay.get(i, {}).get("status") == "pass"]

    not_transparent = [i for i in passed_plain if i not in passed_record]
    spawned = [i for i in passed_record if replay.get(i, {}).get("spawned")]
    listed: list[tuple[str, tuple[str, str]]] = []
    with_mismatch: list[str] = []
    silent: list[str] = []
    for test_id in passed_record:
        if test_id in passed_replay:
            continue
        reason = excluded(test_id)
        if reason is not None:
            listed.append((test_id, reason))
        elif replay.get(test_id, {}).get("report_ok") is False:
            with_mismatch.append(test_id)
        else:
            silent.append(test_id)
    listed_passing = [i for i in passed_replay if excluded(i) is not None]

    print()
    print(f"plain:     {len(passed_plain)} of {len(ids)} pass")
    print(f"recording: {len(passed_record)} of {len(passed_plain)} pass")
    no_spawn = len(passed_record) - len(spawned)
    print(
        f"replay:    {len(passed_replay)} of {len(passed_record)} pass; "
        f"{no_spawn} of {len(passed_record)} spawned no process"
    )
    print(f"reviewed list: {len(replay_exclusions.EXCLUDED)} entries")
    _section("not transparent (pass plain, not while recording): DEFECT", not_transparent, record)
    print(f"\nfail on replay, in the reviewed list ({len(listed)}):")
    for test_id, (kind, why) in listed:
        print(f"  {_short(test_id)}  [{kind}] {why}")
    _section("fail on replay with a mismatch in the report", with_mismatch, replay)
    _section("fail on replay with report ok, not in the list: DEFECT", silent, replay)
    _section("spawned a process on replay: DEFECT", spawned, replay)
    # A replay that takes seconds has waited for a guard (10 s) or come close: worth a look
    # even when it passes.
    slow = [
        (replay[i]["seconds"], i) for i in passed_record if replay.get(i, {}).get("seconds", 0) > 5
    ]
    if slow:
        print(f"\nreplays that took over 5 s ({len(slow)}):")
        for seconds, test_id in sorted(slow, reverse=True):
            print(f"  {_short(test_id)}  {seconds:.1f} s  {replay[test_id]['status']}")
    if listed_passing:
        print(f"\nin the reviewed list but passing on replay ({len(listed_passing)}):")
        for test_id in listed_passing:
            print(f"  {_short(test_id)}")
    defects = len(not_transparent) + len(silent) + len(spawned)
    summary = {
        "python": sys.version.split()[0],
        "tests": len(ids),
        "plain": len(passed_plain),
        "recording": len(passed_record),
        "replay": len(passed_replay),
        "replay_no_spawn": no_spawn,
        "reviewed_list": len(replay_exclusions.EXCLUDED),
        "listed_failing": len(listed),
        "with_mismatch": with_mismatch,
        "silent": silent,
        "not_transparent": not_transparent,
        "spawned": spawned,
        "slow_replays": [i for _, i in slow],
        "defects": defects,
    }
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\ndefects: {defects}")
    if not passed_plain:
        print("conformance: no test passed plain: nothing was checked while recording")
        return 1
    return 1 if defects else 0


def _section(title: str, ids: list[str], results: dict[str, dict[str, Any]]) -> None:
    print(f"\n{title} ({len(ids)}):")
    for test_id in ids:
        record = results.get(test_id, {})
        detail = record.get("mismatches") or record.get("detail") or ""
        if isinstance(detail, list):
            detail = " | ".join(detail)
        last = str(detail).strip().splitlines()[-1:] if detail else []
        print(f"  {_short(test_id)}  {record.get('status', '?')}  {' '.join(last)[:200]}")


if __name__ == "__main__":
    raise SystemExit(main())

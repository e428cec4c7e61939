"""The reviewed list: CPython subprocess tests that cannot pass on replay, and why.

A replayed process is not run, so a test that checks what only a real child does cannot
pass from a tape however faithful the replay is. Each entry is a pattern over
``<module>.<Class>.<test>`` (without the ``test.`` package; ``fnmatch`` syntax, so one
entry can cover both asyncio watchers) and ``(reason, detail)``, the reason one of
:data:`REASONS`. Add an entry only after reading the test: a test that fails on replay
for any other reason is a defect of sessiontape (``run_conformance.py`` counts it), not
an entry here.
"""

from __future__ import annotations

#: Why a test cannot pass on replay.
REASONS = {
    "file side effects": "the child writes to a file or fd it was handed; the test reads it",
    "fd inheritance": "the test checks which file descriptors a real child inherited",
    "real pid": "the test signals, waits for or looks up a real process by its pid",
    "fresh path": "argv or cwd names a path made fresh by this run (a temp file or dir)",
    "spawn internals": "the test replaces or inspects subprocess's own spawn functions",
}

_P = "test_subprocess.POSIXProcessTestCase."
_T = "test_subprocess.ProcessTestCase."

EXCLUDED: dict[str, tuple[str, str]] = {
    # -- the child writes into files the test hands it as its stdio -----------------------
    _T + "test_stdout_filedes": ("file side effects", "stdout is a temp file's fd"),
    _T + "test_stdout_fileobj": ("file side effects", "stdout is a temp file object"),
    _T + "test_stderr_filedes": ("file side effects", "stderr is a temp file's fd"),
    _T + "test_stderr_fileobj": ("file side effects", "stderr is a temp file object"),
    _T + "test_stdout_stderr_file": ("file side effects", "stdout and stderr: one temp file"),
    _P + "test_remapping_std_fds": ("file side effects", "temp files remapped onto fds 0-2"),
    _P + "test_swap_fds": ("file side effects", "temp files swapped among fds 0-2"),
    _P + "test_swap_std_fds_with_one_closed": ("file side effects", "temp files on fds 0-2"),
    _P + "test_umask": ("file side effects", "the child creates a file; its mode is checked"),
    # -- which fds a real child inherited -------------------------------------------------
    _P + "test_close_fds": ("fd inheritance", "the child lists its open fds (fd numbers)"),
    _P + "test_pass_fds": ("fd inheritance", "the child lists the fds passed to it"),
    _P + "test_pass_fds_inheritable": ("fd inheritance", "fd numbers in argv, inheritance"),
    _P + "test_pass_fds_redirected": (
        "fd inheritance",
        "the test reads a pipe of its own that only the real child writes to (it blocks)",
    ),
    # -- a real process by its pid ---------------------------------------------------------
    _P + "test_send_signal_race": ("real pid", "os.waitpid() on the child's pid"),
    _P + "test_stopped": ("real pid", "the child stops itself; os.waitpid() on its pid"),
    _P + "test_zombie_fast_process_del": ("real pid", "subprocess._active holds real pids"),
    _P + "test_leak_fast_process_del_killed": ("real pid", "os.kill() on the child's pid"),
    # -- paths made fresh by the run -------------------------------------------------------
    _P + "test_args_string": ("fresh path", "runs a script written to a new temp file"),
    _P + "test_call_string": ("fresh path", "runs a script written to a new temp file"),
    _T + "test_cwd_with_absolute_arg": ("fresh path", "cwd is a new temp dir"),
    # -- subprocess's own spawn ------------------------------------------------------------
    # (in ProcessTestCase on 3.11 and 3.12, in POSIXProcessTestCase from 3.13)
    "test_subprocess.*ProcessTestCase.test__use_vfork": (
        "spawn internals",
        "mocks _fork_exec and checks its arguments",
    ),
    _P + "test_preexec_errpipe_does_not_double_close_pipes": (
        "spawn internals",
        "a Popen subclass whose _execute_child checks the pipe fds of the real spawn",
    ),
}

#: Entries for tests that only some CPython versions have.
SOME_VERSIONS: dict[str, str] = {
    "test_subprocess.*ProcessTestCase.test__use_vfork": "3.11 to 3.13",
}

#: The CI slice (``run_conformance.py --quick``): patterns of tests that take a few seconds in all,
#: and cover pipes, communicate, run(), the context manager, the relays' transparency
#: and asyncio's transports.
QUICK: tuple[str, ...] = (
    "test_subprocess.ContextManagerTests.*",
    "test_subprocess.MiscTests.*",
    "test_subprocess.RunFuncTestCase.*",
    "test_subprocess.ProcessTestCase.test_communicate_pipe_buf",
    "test_subprocess.ProcessTestCase.test_communicate_returns",
    "test_subprocess.ProcessTestCase.test_stdin_pipe",
    "test_subprocess.ProcessTestCase.test_stdout_pipe",
    "test_subprocess.ProcessTestCase.test_universal_newlines_communicate",
    "test_subprocess.POSIXProcessTestCase.test_kill",
    "test_subprocess.POSIXProcessTestCase.test_terminate",
    "test_subprocess.POSIXProcessTestCase.test_communicate_BrokenPipeError_stdin_close",
    "test_asyncio.test_subprocess.SubprocessThreadedWatcherTests.test_cancel_post_init",
    "test_asyncio.test_subprocess.SubprocessThreadedWatcherTests.test_shell",
    "test_asyncio.test_subprocess.SubprocessThreadedWatcherTests.test_stdin_broken_pipe",
    "test_asyncio.test_subprocess.SubprocessThreadedWatcherTests.test_read_stdout_after_*",
    "test_asyncio.test_subprocess.SubprocessThreadedWatcherTests.test_subprocess_communicate_*",
    "test_asyncio.test_subprocess.SubprocessPidfdWatcherTests.test_cancel_post_init",
)

"""Zoo program 4: a single-threaded command-line tool that triages issues through ``gh``.

The style: a script grown into a tool. ``argparse`` and ``main(argv)``, one thread, every
external effect a ``subprocess.run`` of a program on the PATH (``gh`` here), intercepted
by ``tape.patch_subprocess()`` (the tool takes no runner). The "agent" is a local model
run as a child process that reads the issue as JSON on stdin and answers a label as JSON.
When ``gh`` answers a rate limit the tool backs off with ``time.sleep`` and tries again.

The token is the user's: ``TRIAGE_TOKEN`` if set, else what ``gh auth token`` prints. The
tool checks it first with ``gh auth status --show-token`` (which prints it: output), then
passes it in an ``Authorization`` header on ``gh api`` (argv) and as ``GH_TOKEN`` to
``gh issue edit`` (environment).

``install_world(workdir)`` below makes the world the tool runs in: a fake ``gh`` (a
Python script on a temporary PATH, with its issues and token in a JSON file). It is not
part of the tool.

Variants (``--variant``): ``default``; ``changed`` (the model is asked with a style hint:
an update); ``new_call`` (``gh issue view`` before each edit: a live re-record);
``patched`` (that call behind ``sessiontape.patched``); ``broken`` (issue 3 is labelled
with a prefix: a failure to shrink). The tool has one thread: no race to plant.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import sessiontape

ENTRYPOINT = "zoo-cli"
REPO = "acme/widgets"
BACKOFF = 0.05
MODEL = """
import json, sys
issue = json.load(sys.stdin)
text = (issue["title"] + " " + issue["body"]).lower()
label = "bug" if "crash" in text or "error" in text else "docs" if "readme" in text else "idea"
if issue.get("style") == "terse":
    label = label[:3]
print(json.dumps({"label": label, "why": "keywords"}))
"""


def gh(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["gh", *args], capture_output=True, text=True, env=env, check=False)


def classify(issue: dict[str, Any], variant: str) -> str:
    request = {"title": issue["title"], "body": issue["body"]}
    if variant == "changed":
        request["style"] = "terse"
    answer = subprocess.run(
        [sys.executable, "-c", MODEL],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=True,
    )
    return str(json.loads(answer.stdout)["label"])


def label_issue(number: int, label: str, token: str, variant: str) -> int:
    """Add ``label``, backing off on rate limits; the number of attempts it took."""
    env = {**os.environ, "GH_TOKEN": token}
    if variant == "new_call" or (variant == "patched" and sessiontape.patched("zoo-cli-view")):
        gh("issue", "view", str(number), "--repo", REPO, env=env)
    for attempt in range(1, 5):
        done = gh("issue", "edit", str(number), "--repo", REPO, "--add-label", label, env=env)
        if done.returncode == 0:
            return attempt
        if "rate limit" not in done.stderr:
            raise RuntimeError(f"gh issue edit {number} failed: {done.stderr.strip()}")
        time.sleep(BACKOFF * attempt)
    raise RuntimeError(f"gh issue edit {number}: still rate limited")


def triage(workdir: Path, variant: str) -> dict[str, Any]:
    token = os.environ.get("TRIAGE_TOKEN") or gh("auth", "token").stdout.strip()
    status = gh("auth", "status", "--show-token", env={**os.environ, "GH_TOKEN": token})
    if "Logged in" not in status.stdout:
        raise RuntimeError(f"gh is not logged in: {status.stderr.strip()}")
    listed = gh("api", "-H", f"Authorization: token {token}", f"repos/{REPO}/issues")
    if listed.returncode != 0:
        raise RuntimeError(f"gh api failed: {listed.stderr.strip()}")
    labels: dict[str, str] = {}
    attempts = 0
    for issue in sorted(json.loads(listed.stdout), key=lambda i: i["number"]):
        label = classify(issue, variant)
        if variant == "broken" and issue["number"] == 3:
            label = f"triage/{label}"
        attempts += label_issue(issue["number"], label, token, variant)
        labels[str(issue["number"])] = label
    summary = "".join(f"#{n}: {label}\n" for n, label in labels.items())
    (workdir / "triage.md").write_text(summary, encoding="utf-8")
    return {"labels": labels, "attempts": attempts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="triage", description="Label open issues.")
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--variant", default="default")
    sessiontape.add_record_argument(parser)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = sessiontape.record_path(args)
    roots = {"work": str(args.workdir)}
    with sessiontape.record(path, entrypoint=ENTRYPOINT, roots=roots) as tape:
        print(run(tape, args.workdir, args.variant))
    return 0


def run(tape: sessiontape.Tape, workdir: Path, variant: str = "default") -> dict[str, Any]:
    """The tool's work, wired through ``tape`` (the same in every mode)."""
    with tape.patch_subprocess():
        outcome = triage(workdir, variant)
    tape.finish(outcome=outcome)
    return outcome


# -- the world the tool runs in (not part of the tool) ------------------------------------

FAKE_GH = """
import json, os, sys
state_path = os.environ["FAKE_GH_STATE"]
with open(state_path) as f:
    state = json.load(f)
args = sys.argv[1:]
def save():
    fresh = state_path + "." + str(os.getpid())
    with open(fresh, "w") as f:
        json.dump(state, f)
    os.replace(fresh, state_path)
if args[:2] == ["auth", "token"]:
    print(state["token"])
elif args[:2] == ["auth", "status"]:
    if os.environ.get("GH_TOKEN") != state["token"]:
        sys.exit("You are not logged into any GitHub hosts.")
    print("github.com\\n  Logged in to github.com account zoo (GH_TOKEN)")
    print("  - Token: " + os.environ["GH_TOKEN"])
elif args[0] == "api":
    if args[2] != "Authorization: token " + state["token"]:
        sys.exit("HTTP 401: Bad credentials")
    print(json.dumps(state["issues"]))
elif args[:2] in (["issue", "edit"], ["issue", "view"]):
    if os.environ.get("GH_TOKEN") != state["token"]:
        sys.exit("HTTP 401: Bad credentials")
    issue = next(i for i in state["issues"] if str(i["number"]) == args[2])
    if args[1] == "view":
        print(issue["title"] + "\\n\\n" + issue["body"])
    elif issue["number"] == 2 and not state.get("limited"):
        state["limited"] = True
        save()
        sys.exit("HTTP 429: API rate limit exceeded")
    else:
        issue.setdefault("labels", []).append(args[args.index("--add-label") + 1])
        save()
        print("https://github.com/" + args[4] + "/issues/" + args[2])
else:
    sys.exit("fake gh: unknown command " + " ".join(args))
"""

ISSUES = [
    {"number": 1, "title": "Crash on start", "body": "It throws an error at boot."},
    {"number": 2, "title": "Typo in README", "body": "The readme says teh."},
    {"number": 3, "title": "Dark mode", "body": "Would be nice."},
    {"number": 4, "title": "Error on save", "body": "Saving fails."},
]


def install_world(workdir: Path, token: str) -> dict[str, str]:
    """A fake ``gh`` on a PATH of its own; the environment variables that find it."""
    bin_dir = workdir / "world" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "gh"
    script.write_text(f"#!{sys.executable}\n{FAKE_GH}", encoding="utf-8")
    script.chmod(0o755)
    state = workdir / "world" / "gh.json"
    state.write_text(json.dumps({"token": token, "issues": ISSUES}), encoding="utf-8")
    return {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "FAKE_GH_STATE": str(state),
    }


if __name__ == "__main__":
    sys.exit(main())

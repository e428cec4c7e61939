"""An ordinary session: what sessiontape records when no secret is about.

Git shas and abbreviations, UUIDs, paths, URLs (with a user, too), base64 blobs of
outputs, digests, token counts, options that look like a password's (``mkdir -p``,
``ssh -p 22``, ``ls -a``) and credential words in prose. :func:`record_ordinary` records
them through the real API and a real subprocess; the false-positive figure is how many
of them the tape does not hold as they were (nothing here is a secret).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import sys
import uuid
from pathlib import Path
from typing import Any

import sessiontape

# The child prints what it is given hex-encoded, on stdout.
CHILD = "import sys; sys.stdout.write(bytes.fromhex(sys.argv[1]).decode())"


def ordinary_texts(rng: random.Random) -> list[str]:
    """One session's worth of ordinary texts, fresh for each ``rng``."""
    shas = [hashlib.sha1(str(rng.random()).encode()).hexdigest() for _ in range(6)]
    ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(3)]
    blob = base64.b64encode(rng.randbytes(rng.randrange(60, 400))).decode()
    digest = hashlib.sha256(blob.encode()).hexdigest()
    return [
        "\n".join(f"commit {sha}\nAuthor: Dev <dev@example.com>\n\n    fix: retry" for sha in shas),
        " ".join(sha[:7] for sha in shas),
        f"HEAD is now at {shas[0][:12]} Merge branch 'feature/key-rotation'",
        json.dumps({"session_id": ids[0], "request_id": ids[1], "ok": True}),
        f"request {ids[2]} done in {rng.randrange(1, 900)} ms",
        f"/home/dev/.cache/pip/wheels/{digest[:2]}/{digest[2:4]}/{digest[4:]}",
        "src/sessiontape/scrub/_shapes.py:42: in redact",
        f"https://github.com/example/repo/pull/{rng.randrange(1, 9999)}/files#diff-{digest[:16]}",
        "ssh://git@github.com/example/repo.git",
        "git@github.com:example/repo.git",
        f"data: {blob}",
        blob,
        f"sha256:{digest}",
        "The key to the retry loop is the token bucket: 5 tokens, refilled each second.",
        f"input_tokens: {rng.randrange(10**6)}, output_tokens: {rng.randrange(10**4)}",
        "token count 123456789012, keys 3, password reset for alice@example.com",
        "Press any key to continue; the bearer of this letter is Alice.",
        f"primary key id_{shas[1][:8]}, sort key created_at, foreign key user_id",
        "keyboard layout us; monkey patching of subprocess.Popen",
        "mkdir -p build/dist && cp -a assets/ build/ && ls -a",
        "docker run -p 8080:80 -p 8443:443 nginx:1.25",
        "pip install --upgrade pip setuptools wheel -r requirements.txt",
        "Version 1.2.3-rc.4+build.20251125 of claude-sonnet-4-5 on host-01.internal",
        "password_hash = bcrypt.hashpw(password, salt)",
        f"Bearer token expired at 2025-11-25T21:00:{rng.randrange(10, 60)}Z; refreshing",
    ]


class _Agent:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer

    def execute(self, request: dict[str, Any]) -> dict[str, Any]:
        return self.answer


def record_ordinary(directory: Path, seed: int) -> tuple[Path, list[str]]:
    """Record one ordinary session (each text as a process's output, an agent's result,
    a store argument, in the config); return the tape and the texts."""
    texts = ordinary_texts(random.Random(seed))
    path = directory / "ordinary.jsonl"
    with sessiontape.record(path, config={"notes": texts[:3]}) as tape:
        runner = tape.process_runner()
        agent = tape.agent(_Agent({"texts": texts}))
        for text in texts:
            result = runner.run([sys.executable, "-c", CHILD, text.encode().hex()], text=True)
            assert result.stdout == text
        agent.execute({"prompt": texts[0]})
        tape.finish(outcome={"summary": texts[-1]})
    return path, texts


def altered(data: bytes, texts: list[str]) -> list[str]:
    """The texts that the tape does not hold as they were (JSON-escaped)."""
    return [t for t in texts if json.dumps(t)[1:-1].encode() not in data]

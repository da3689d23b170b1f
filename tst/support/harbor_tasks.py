"""Harbor task folders written for the tests: their Dockerfiles start FROM the locally built sandbox
image, so nothing is pulled. `DATASET` holds tasks whose reference plays score 1 (a reward.txt task, a
reward.json one whose Dockerfile copies a file in, one using `docker_image`); `EDGE` a test.sh past
its timeout and an agent timeout; `MALFORMED` one folder per kind of bad input; `GUARDED` tasks a
model would forge its reward in (a test.sh that sources the home's tools and runs the image's
interpreter; a task declaring the one system folder its work changes)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent / "harbor"
DATASET = ROOT / "dataset"
EDGE = ROOT / "edge"
MALFORMED = ROOT / "malformed"
GUARDED = ROOT / "guarded"

SANDBOX_IMAGE = "agent-env-sandbox:latest"
ON_THE_SANDBOX_IMAGE = f'[environment]\ndocker_image = "{SANDBOX_IMAGE}"\n'
"""The start of a task.toml whose task runs on the sandbox image: write more `[environment]` keys after
it, then other tables."""
REWARD_ONE = "#!/bin/bash\nmkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt\n"


def write_task(
    parent: Path,
    name: str,
    toml: str = ON_THE_SANDBOX_IMAGE,
    *,
    test_sh: str = REWARD_ONE,
    files: dict[str, str] | None = None,
) -> Path:
    """A Harbor task folder written for a test under `parent`: its instruction, `toml` as its
    task.toml, `test_sh` as tests/test.sh, and `files` (more of them, by relative path)."""
    folder = parent / name
    written = {"instruction.md": f"Do task {name}.\n", "task.toml": toml, "tests/test.sh": test_sh}
    for relative, text in {**written, **(files or {})}.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder

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

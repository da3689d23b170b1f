"""deploy/'s files as its tests read them: the Dockerfile through buildkit's parser, the manifests as
YAML, the documentation's page on them (docs/guides/deploying.md)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dockerfile
import yaml

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
KUBERNETES = DEPLOY / "kubernetes"
HEALTHCHECK = DEPLOY / "healthcheck.py"
DEPLOYING_PAGE = ROOT / "docs" / "guides" / "deploying.md"
KUBERNETES_VERSION = "1.30"
INIT = ("tini", "--")


def instructions(path: Path = DOCKERFILE) -> tuple[dockerfile.Command, ...]:
    return dockerfile.parse_file(str(path))


def instruction(name: str, path: Path = DOCKERFILE) -> dockerfile.Command:
    """The last `name` instruction: the one that takes effect."""
    found = [command for command in instructions(path) if command.cmd == name.upper()]
    assert found, f"{path.name} has no {name.upper()}"
    return found[-1]


def manifests() -> dict[str, dict[str, Any]]:
    """Every resource in deploy/kubernetes, by kind."""
    resources = [
        resource
        for path in sorted(KUBERNETES.glob("*.yaml"))
        for resource in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if resource
    ]
    by_kind = {resource["kind"]: resource for resource in resources}
    assert len(by_kind) == len(resources), "one resource of each kind"
    return by_kind


def container() -> dict[str, Any]:
    pod = manifests()["Deployment"]["spec"]["template"]["spec"]
    (only,) = pod["containers"]
    found: dict[str, Any] = only
    return found


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None, f"{url} names no port"
    return port


def documented_serve_command() -> list[str]:
    """The `agent-env serve` command of the deploying page's bash blocks: the one the image runs."""
    text = DEPLOYING_PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)
    commands = [line for block in blocks for line in block.splitlines() if line.startswith("agent-env serve")]
    assert len(commands) == 1, f"one `agent-env serve` line in the page's bash blocks, found {commands}"
    return shlex.split(commands[0], comments=True)

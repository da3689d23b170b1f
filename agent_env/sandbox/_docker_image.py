"""`agent-env sandbox-image`: the Docker sandbox's image, built locally from Debian's static bash and busybox.

Sandboxes need no registry and no network: the image is a root filesystem of two Debian packages,
`bash-static` (a `/bin/bash` with no shared libraries) and `busybox-static` (coreutils, grep, sed,
awk, find, tar... as applets of one static binary), imported into the engine as one layer. It
takes a few seconds and about 5 MB.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from agent_env._contracts.sandbox_settings import DEFAULT_IMAGE
from agent_env._errors import AgentEnvError
from agent_env.sandbox._docker_engine import SANDBOX_LABEL, docker_client

PACKAGES = ("bash-static", "busybox-static")
WORK_FOLDER = "/work"
_CHANGES = [
    "ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
    "ENV LANG=C.UTF-8",
    f"WORKDIR {WORK_FOLDER}",
    'CMD ["/bin/sleep", "infinity"]',
    f"LABEL {SANDBOX_LABEL}.image=1",
]


class ImageBuildError(AgentEnvError, RuntimeError):
    """The image could not be built; the message says which step failed and what to do."""


def build_sandbox_image(tag: str = DEFAULT_IMAGE, *, client: Any = None) -> str:
    """Build the image and import it into the engine as `tag`; returns the image's id."""
    with tempfile.TemporaryDirectory(prefix="agent-env-image-") as work:
        folder = Path(work)
        for deb in _download(folder):
            _run(["dpkg-deb", "-x", str(deb), str(folder / "unpacked")], "unpack " + deb.name)
        rootfs = _rootfs(folder / "unpacked")
    engine = client if client is not None else docker_client()
    repository, _, version = tag.rpartition(":") if ":" in tag.rsplit("/", 1)[-1] else (tag, "", "latest")
    engine.api.import_image_from_data(rootfs, repository=repository, tag=version, changes=_CHANGES)
    return str(engine.images.get(tag).id)


def _download(folder: Path) -> list[Path]:
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise ImageBuildError(
            "building the sandbox image needs apt-get and dpkg-deb (Debian or Ubuntu); on another system, "
            "import any image with /bin/bash and set [sandbox] image in bundle.toml"
        )
    _run(["apt-get", "download", *PACKAGES], "download " + " and ".join(PACKAGES), cwd=folder)
    debs = sorted(folder.glob("*.deb"))
    if len(debs) != len(PACKAGES):
        raise ImageBuildError(f"apt-get download left {len(debs)} packages, expected {len(PACKAGES)}")
    return debs


def _rootfs(unpacked: Path) -> bytes:
    """The image's root filesystem as a tar: bash, busybox and a link for each of its applets."""
    busybox = unpacked / "bin" / "busybox"
    bash = unpacked / "bin" / "bash-static"
    applets = _run([str(busybox), "--list-full"], "list busybox's applets").split()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for folder, mode in (
            ("bin", 0o755),
            ("usr", 0o755),
            ("usr/bin", 0o755),
            ("sbin", 0o755),
            ("usr/sbin", 0o755),
            ("etc", 0o755),
            ("tmp", 0o1777),
            ("work", 0o777),
        ):
            _add(tar, folder, tarfile.DIRTYPE, mode)
        _add(tar, "bin/bash", tarfile.REGTYPE, 0o755, bash.read_bytes())
        _add(tar, "bin/busybox", tarfile.REGTYPE, 0o755, busybox.read_bytes())
        _add(tar, "bin/sh", tarfile.SYMTYPE, 0o777, link="bash")
        for applet in sorted(set(applets)):
            if Path(applet).name not in {"bash", "sh", "busybox"} and applet.count("/") in (1, 2):
                _add(tar, applet, tarfile.SYMTYPE, 0o777, link="/bin/busybox")
        _add(
            tar,
            "etc/passwd",
            tarfile.REGTYPE,
            0o644,
            b"root:x:0:0:root:/root:/bin/bash\nagent:x:1000:1000:agent:/work:/bin/bash\n",
        )
        _add(tar, "etc/group", tarfile.REGTYPE, 0o644, b"root:x:0:\nagent:x:1000:\n")
    return buffer.getvalue()


def _add(tar: tarfile.TarFile, name: str, kind: bytes, mode: int, data: bytes = b"", link: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname, info.size = kind, mode, link, len(data)
    tar.addfile(info, io.BytesIO(data) if data else None)


def _run(command: list[str], step: str, cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ImageBuildError(f"could not {step}: {exc}") from exc
    if done.returncode != 0:
        hint = " (run `apt-get update` first?)" if command[0] == "apt-get" else ""
        raise ImageBuildError(f"could not {step}{hint}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout

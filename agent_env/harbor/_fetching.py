"""Whether a test.sh fetches from the network: a simple scan for the commands that download (curl,
wget, package installs, git clone), outside comments.

Many Terminal-Bench test.sh scripts install their test tools at verification time; without a network
they fail and write a 0 of their own, which looks like a wrong answer. The scan errs towards saying
so (`pip install --no-index` counts too): it only decides whether the load warns.
"""

from __future__ import annotations

import re

_FETCHERS = re.compile(
    r"(?<![\w.-])("
    r"curl|wget|uvx|npx"
    r"|(?:python3?\s+-m\s+)?pip3?\s+install"
    r"|uv\s+(?:pip\s+install|add|sync|tool\s+install|run\s+--with)"
    r"|apt(?:-get)?\s+(?:-\S+\s+)*(?:update|install)"
    r"|apk\s+add|(?:yum|dnf|conda|mamba)\s+install"
    r"|git\s+clone|npm\s+(?:install|i|ci)|go\s+(?:get|install)|cargo\s+install"
    r")(?![\w.-])"
)
_COMMENT = re.compile(r"(?:^|\s)#.*$")


def network_fetches(script: str) -> list[str]:
    """The commands in `script` that fetch from the network, each once, in order (`curl`,
    `pip install`): none for a script that needs no network."""
    found: list[str] = []
    for line in script.splitlines():
        if line.startswith("#!"):
            continue
        for match in _FETCHERS.finditer(_COMMENT.sub("", line)):
            command = " ".join(word for word in match.group(1).split() if not word.startswith("-"))
            if command not in found:
                found.append(command)
    return found

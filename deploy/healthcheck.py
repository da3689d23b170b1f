"""Whether `agent-env serve` answers `GET /health`: exit 0 if it does, 1 with the reason if not.

The image's HEALTHCHECK and the Kubernetes probes run it. It exists because a server with a token
requires it on every route, /health included, and neither an HTTP probe nor a one-line curl can send
a Secret's value: this sends `AGENTENV_TOKEN`, when set, as the bearer token the server checks.
The standard library alone, so a probe costs an interpreter's start and nothing of the package.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

DEFAULT_URL = "http://127.0.0.1:8000/health"
TOKEN_VARIABLE = "AGENTENV_TOKEN"
TIMEOUT_S = 4.0


def check(url: str, token: str | None) -> str | None:
    """None when `url` answers 200; otherwise what went wrong."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            return None if answer.status == 200 else f"{url} answered {answer.status}"
    except urllib.error.HTTPError as exc:
        hint = f" (is {TOKEN_VARIABLE} the server's token?)" if exc.code == 401 else ""
        return f"{url} answered {exc.code}{hint}"
    except OSError as exc:
        return f"{url} did not answer: {exc}"


def main(argv: list[str]) -> int:
    url = argv[1] if len(argv) > 1 else DEFAULT_URL
    problem = check(url, os.environ.get(TOKEN_VARIABLE) or None)
    if problem is not None:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

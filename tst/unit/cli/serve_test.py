"""`agent-env serve`, run as a user runs it: a process of its own, on loopback, stopped with SIGTERM.

It says where it listens on its first line, logs one line per episode, and on SIGTERM interrupts the
calls in flight, tears down every episode (sandbox folders, processes), and only then ends, by the
signal, as uvicorn has it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from agent_env.openenv import AgentEnvAction
from tst.support.metrics import scrape
from tst.support.waiting import alive, until
from tst.support.wharf import (
    BASH_TASK,
    SINGLE_TURN_TASK,
    SLEEPER,
    WHARF,
    play_reference,
    sandbox_folders,
    sleeper_pids,
    wharf_with_a_broken_task,
)

pytestmark = pytest.mark.needs("openenv_installed")

SCRIPT = Path(sys.executable).parent / "agent-env"
STARTUP_S = 60.0
"""A bound on the server's first line: importing OpenEnv alone takes about 7 s."""
EXIT_S = 30.0
WAIT_S = 10.0
"""How long the server, a process of its own, may take to log, to end a call or to leave nothing running."""
CLIENT_TIMEOUT_S = 90.0
EPISODE_LINE = re.compile(
    r"agent_env\.openenv: episode (?P<split>\w+)/(?P<index>\d+) (?P<task>[\w-]+) \[(?P<toolset>[\w+]+)\]: "
    r"(?P<outcome>.+) after (?P<calls>\d+) calls? in (?P<seconds>\d+\.\d\d)s$"
)


@dataclass
class ServeProcess:
    """A running `agent-env serve`, its output files, and the processes its sandboxes started."""

    process: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path
    sandboxes: Path
    strays: list[int] = field(default_factory=list)

    def output(self) -> str:
        return self.stdout.read_text() + self.stderr.read_text()

    def first_line(self) -> str:
        """The first line the server prints, once it has printed it; fails past `STARTUP_S`."""
        assert until(lambda: "\n" in self.stdout.read_text() or self.process.poll() is not None, STARTUP_S)
        text = self.stdout.read_text()
        assert "\n" in text, f"agent-env serve printed no line (exit {self.process.poll()}):\n{self.output()}"
        return text.splitlines()[0]

    def episode_lines(self) -> list[dict[str, str]]:
        found = (EPISODE_LINE.search(line) for line in self.output().splitlines())
        return [match.groupdict() for match in found if match]


def listening_url(line: str) -> str:
    found = re.search(r"http://[^\s,]+", line)
    assert found, f"no http URL in {line!r}"
    return found.group(0)


def environment(sandboxes: Path, **variables: str) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if k != "MAX_CONCURRENT_ENVS"}
    return {**inherited, "TMPDIR": str(sandboxes), "PYTHONUNBUFFERED": "1", **variables}


@pytest.fixture
def agent_env_serve(tmp_path: Path) -> Iterator[Callable[..., ServeProcess]]:
    """Start `agent-env serve ARGS` with TMPDIR in tmp_path; killed after the test if still running."""
    started: list[ServeProcess] = []

    def start(*args: str) -> ServeProcess:
        sandboxes = tmp_path / "tmp"
        sandboxes.mkdir(exist_ok=True)
        stdout, stderr = tmp_path / f"stdout-{len(started)}.txt", tmp_path / f"stderr-{len(started)}.txt"
        with stdout.open("wb") as out, stderr.open("wb") as err:
            process = subprocess.Popen(
                [str(SCRIPT), "serve", *args], stdout=out, stderr=err, env=environment(sandboxes)
            )
        served = ServeProcess(process, stdout, stderr, sandboxes)
        started.append(served)
        return served

    yield start
    for served in started:
        if served.process.poll() is None:
            served.process.kill()
            served.process.wait(EXIT_S)
        for pid in served.strays:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_serve_says_on_its_first_line_that_it_listens_on_loopback_and_plays_an_episode_it_logs_in_one_line(
    agent_env_serve: Callable[..., ServeProcess], connect: Callable[..., Any]
) -> None:
    served = agent_env_serve(str(WHARF), "--port", "0")
    line = served.first_line()
    url = listening_url(line)
    client = connect(url, message_timeout_s=CLIENT_TIMEOUT_S)

    started = client.reset(split="train", index=SINGLE_TURN_TASK, timeout_s=30)
    *calls, scored = play_reference(client, "store-crate-000")

    assert line.startswith("agent-env: serving wharf (eval 11, train 33 tasks) on http://127.0.0.1:")
    assert urlsplit(url).hostname == "127.0.0.1" and (urlsplit(url).port or 0) > 0
    assert started.observation["task_id"] == "store-crate-000"
    assert [call.observation["error"] for call in calls] == [None]
    assert (scored.done, scored.reward) == (True, 1.0)
    assert until(lambda: served.episode_lines() != [], WAIT_S)
    [logged] = served.episode_lines()
    assert (logged["split"], logged["index"], logged["task"], logged["toolset"]) == (
        "train",
        "0",
        "store-crate-000",
        "dock",
    )
    assert (logged["outcome"], logged["calls"]) == ("scored 1", "2")
    assert "not a loopback address" not in served.output()


def test_sigterm_interrupts_the_call_in_flight_and_tears_down_every_episode_before_the_process_ends(
    agent_env_serve: Callable[..., ServeProcess], connect: Callable[..., Any]
) -> None:
    served = agent_env_serve(str(WHARF), "--port", "0")
    url = listening_url(served.first_line())
    finished = connect(url, message_timeout_s=CLIENT_TIMEOUT_S)
    finished.reset(split="train", index=SINGLE_TURN_TASK, timeout_s=30)
    *calls, scored = play_reference(finished, "store-crate-000")
    idle, busy = (
        connect(url, message_timeout_s=CLIENT_TIMEOUT_S),
        connect(url, message_timeout_s=CLIENT_TIMEOUT_S),
    )
    idle.reset(split="train", index=BASH_TASK, timeout_s=30)
    busy.reset(split="train", index=BASH_TASK, timeout_s=30)
    outcomes: list[Any] = []

    def call_sleeper() -> None:
        try:
            outcomes.append(busy.step(AgentEnvAction.call_tool("bash", {"command": SLEEPER}).wire()))
        except Exception as exc:
            outcomes.append(exc)

    caller = threading.Thread(target=call_sleeper, daemon=True)
    caller.start()
    assert until(lambda: sleeper_pids(served.sandboxes) != [], WAIT_S)
    [pid] = sleeper_pids(served.sandboxes)
    served.strays.append(pid)
    sandboxes_before = sandbox_folders(served.sandboxes)

    served.process.send_signal(signal.SIGTERM)
    exit_code = served.process.wait(EXIT_S)
    caller.join(WAIT_S)

    assert [call.observation["error"] for call in calls] == [None]
    assert scored.reward == 1.0
    assert len(sandboxes_before) == 2
    assert exit_code == -signal.SIGTERM, served.output()
    assert sandbox_folders(served.sandboxes) == []
    assert until(lambda: not alive(pid), WAIT_S), f"the sleeping bash command ({pid}) outlived the server"
    assert not caller.is_alive() and isinstance(outcomes[0], ConnectionClosed)
    logged = sorted(served.episode_lines(), key=lambda line: line["outcome"])
    assert [(line["index"], line["task"], line["toolset"]) for line in logged] == [
        ("10", "manifest-total-000", "dock+bash"),
        ("10", "manifest-total-000", "dock+bash"),
        ("0", "store-crate-000", "dock"),
    ]
    abandoned, failed, finished_line = logged
    assert abandoned["outcome"].startswith("abandoned") and abandoned["calls"] == "0"
    assert failed["outcome"].startswith("failed SHUTTING_DOWN: ") and failed["calls"] == "1"
    assert finished_line["outcome"] == "scored 1"


def test_serve_with_a_bad_max_concurrent_envs_exits_non_zero_and_says_how_to_fix_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(SCRIPT), "serve", str(WHARF), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=STARTUP_S,
        check=False,
        env=environment(tmp_path, MAX_CONCURRENT_ENVS="lots"),
    )

    assert done.returncode == 2
    assert "error: MAX_CONCURRENT_ENVS must be a positive integer, got 'lots'" in done.stderr
    assert "set it to, say, 64" in done.stderr
    assert "serving" not in done.stdout


def test_serve_with_a_token_requires_it_of_every_request_and_says_so_on_its_first_line(
    agent_env_serve: Callable[..., ServeProcess], connect: Callable[..., Any]
) -> None:
    served = agent_env_serve(str(WHARF), "--port", "0", "--token", "wharf-token-7")
    line = served.first_line()
    url = listening_url(line)
    client = connect(
        url, message_timeout_s=CLIENT_TIMEOUT_S, headers={"Authorization": "Bearer wharf-token-7"}
    )

    started = client.reset(split="train", index=SINGLE_TURN_TASK, timeout_s=30)

    assert line.endswith(", bearer token required")
    assert httpx.get(f"{url}/health", timeout=10).status_code == 401
    assert started.observation["task_id"] == "store-crate-000"
    assert "--token shows in `ps`" in served.stderr.read_text()
    assert "AGENTENV_TOKEN or pass --token-file PATH" in served.stderr.read_text()


def test_serve_with_a_token_file_requires_its_token_without_a_warning_and_answers_the_hosts_it_allows(
    agent_env_serve: Callable[..., ServeProcess], tmp_path: Path
) -> None:
    (tmp_path / "token").write_text("wharf-token-8\n")
    served = agent_env_serve(
        str(WHARF),
        "--port",
        "0",
        "--token-file",
        str(tmp_path / "token"),
        "--allow-host",
        "agent-env.example",
    )
    url = listening_url(served.first_line())
    token = {"Authorization": "Bearer wharf-token-8"}
    port = urlsplit(url).port

    allowed = httpx.get(f"{url}/health", headers={**token, "Host": f"agent-env.example:{port}"}, timeout=10)
    foreign = httpx.get(f"{url}/health", headers={**token, "Host": f"evil.example:{port}"}, timeout=10)

    assert httpx.get(f"{url}/health", timeout=10).status_code == 401
    assert (allowed.status_code, foreign.status_code) == (200, 403)
    assert "--allow-host" in foreign.json()["detail"]
    assert "warning" not in served.stderr.read_text()


@pytest.mark.parametrize(
    ("content", "says"),
    [(None, "cannot read the token file"), ("\n", "error: the token file")],
    ids=["missing", "empty"],
)
def test_serve_with_a_token_file_missing_or_empty_exits_2_saying_so(
    tmp_path: Path, content: str | None, says: str
) -> None:
    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)
    done = subprocess.run(
        [str(SCRIPT), "serve", str(WHARF), "--port", "0", "--token-file", str(path)],
        capture_output=True,
        text=True,
        timeout=STARTUP_S,
        check=False,
        env=environment(tmp_path),
    )

    assert done.returncode == 2
    assert f"{says} {path}" in done.stderr
    assert ("is empty" in done.stderr) == (content is not None)
    assert "serving" not in done.stdout


def test_serve_with_a_token_that_cannot_travel_in_a_header_exits_non_zero_saying_why(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(SCRIPT), "serve", str(WHARF), "--port", "0", "--token", "two words"],
        capture_output=True,
        text=True,
        timeout=STARTUP_S,
        check=False,
        env=environment(tmp_path),
    )

    assert done.returncode == 2
    assert "error: a token must be printable ASCII without spaces" in done.stderr
    assert "serving" not in done.stdout


def test_serve_off_loopback_without_a_token_exits_2_saying_to_set_the_variable_or_a_token_file(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [str(SCRIPT), "serve", str(WHARF), "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=STARTUP_S,
        check=False,
        env=environment(tmp_path),
    )

    assert done.returncode == 2
    assert done.stderr.startswith("error: refusing to serve on 0.0.0.0 without a token: it is not a loopback")
    assert "Set AGENTENV_TOKEN, or pass --token-file PATH" in done.stderr
    assert "pass --insecure-no-token" in done.stderr
    assert "serving" not in done.stdout


def test_serve_off_loopback_with_insecure_no_token_goes_past_the_token_check(tmp_path: Path) -> None:
    unassigned = "192.0.2.1"  # TEST-NET-1: no machine has it, so the server gets as far as binding it
    done = subprocess.run(
        [str(SCRIPT), "serve", str(WHARF), "--host", unassigned, "--port", "0", "--insecure-no-token"],
        capture_output=True,
        text=True,
        timeout=STARTUP_S,
        check=False,
        env=environment(tmp_path),
    )

    assert done.returncode == 2
    assert "refusing" not in done.stderr
    assert "error: [Errno 99] Cannot assign requested address" in done.stderr


def test_serve_with_skip_broken_tasks_says_at_start_how_many_it_skipped_lists_each_and_counts_them_in_metrics(
    agent_env_serve: Callable[..., ServeProcess], tmp_path: Path
) -> None:
    bundle = wharf_with_a_broken_task(tmp_path / "wharf")
    served = agent_env_serve(str(bundle), "--port", "0", "--skip-broken-tasks")
    line = served.first_line()
    assert until(lambda: "lists every problem" in served.stdout.read_text(), WAIT_S)

    assert line.startswith("agent-env: serving wharf (train 2 tasks) on http://127.0.0.1:")
    assert line.endswith("; 1 of 3 tasks skipped: they do not load (listed below)")
    assert served.stdout.read_text().splitlines()[1:4] == [
        "agent-env: skipped 1 of 3 tasks:",
        "  tasks/train.jsonl:3 (task 'stray-000'): agent 'stowaway' is not defined (choices: clerk, cook, "
        "deckhand, harbormaster, quartermaster)",
        f"(`agent-env check {bundle}` lists every problem)",
    ]
    assert scrape(listening_url(line))[("agent_env_tasks_skipped", ())] == 1


CONCIERGE = Path(__file__).resolve().parents[3] / "examples" / "concierge"


@pytest.mark.needs("judge_installed")
def test_serve_says_at_start_what_each_judge_asks_and_where_verdicts_are_kept(
    agent_env_serve: Callable[..., ServeProcess], tmp_path: Path
) -> None:
    served = agent_env_serve(
        str(CONCIERGE),
        "--port",
        "0",
        "--judge-url",
        "http://127.0.0.1:9/v1",
        "--judge-model",
        "local-judge",
        "--judge-cache",
        str(tmp_path / "verdicts"),
    )
    served.first_line()
    assert until(lambda: "verdicts are kept" in served.stdout.read_text(), WAIT_S)

    assert served.stdout.read_text().splitlines()[1:3] == [
        "agent-env: judge 'courtesy' asks model 'local-judge' at http://127.0.0.1:9/v1 (8 at once at most)",
        f"agent-env: the judges' verdicts are kept in {tmp_path / 'verdicts'}",
    ]


@pytest.mark.needs("judge_installed")
def test_serve_whose_judge_s_key_is_unset_exits_2_naming_the_variable(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(SCRIPT), "serve", str(CONCIERGE), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=STARTUP_S,
        env={**environment(tmp_path), "OPENAI_API_KEY": ""},
    )

    assert done.returncode == 2
    assert "judge 'courtesy' reads its endpoint's key from $OPENAI_API_KEY, which is not set" in done.stderr

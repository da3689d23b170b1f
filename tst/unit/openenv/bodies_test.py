"""Request bodies: none over `MAX_BODY_BYTES` is read, and a request that does not fit its route is
answered with what was wrong, never with what it sent.

A 1 GB POST to the Task API took the server to 3.3 GiB, and its 422 echoed the whole body back.
Now a body declared over the cap is refused with 413 before a byte of it is read, a chunked one the
moment its chunks pass the cap, and the connection is closed rather than read on; the 422 of every
route names each problem's place and kind alone.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx
import pytest

from agent_env.openenv._bodies import MAX_BODY_BYTES
from agent_env.testing import FakeTask
from tst.support.raw_http import answer_of, chunked, request_head, sent_until_answered
from tst.support.serving import Serve

pytestmark = pytest.mark.needs("openenv_installed")

ANSWER_S = 10.0
CHUNK = b"x" * 65536
OFFERED = 256 * MAX_BODY_BYTES
SECRET = "do-not-echo-"
ROUTES_WITH_BODIES = [
    "/tasks/tasks",
    "/tasks/num_tasks",
    "/tasks/task",
    "/tasks/task_range",
    "/tasks/solutions",
]


def test_a_body_declared_over_the_cap_is_refused_413_before_any_of_it_is_read(serve: Serve) -> None:
    server = serve({"train": [FakeTask("store")]})
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=ANSWER_S)

    sock.sendall(request_head("/tasks/task", f"Content-Length: {1 << 30}"))  # not a byte of the body
    status, headers, body = answer_of(sock)

    assert status == 413
    assert headers["connection"] == "close"
    assert json.loads(body) == {
        "detail": f"the request's body is over {MAX_BODY_BYTES} bytes, the most this server reads"
    }


def test_a_chunked_body_is_refused_413_once_its_chunks_pass_the_cap_and_no_more_is_read(serve: Serve) -> None:
    server = serve({"train": [FakeTask("store")]})
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=ANSWER_S)
    sock.sendall(request_head("/tasks/task", "Transfer-Encoding: chunked"))
    sent = sent_until_answered(sock, chunked(CHUNK), OFFERED)
    status, headers, body = answer_of(sock)

    assert status == 413 and headers["connection"] == "close"
    assert "over 1048576 bytes" in json.loads(body)["detail"]
    assert sent < OFFERED // 2, "the server read on"  # the kernel's buffers take tens of MiB at most


def test_a_body_of_exactly_the_cap_is_read_and_answered(serve: Serve) -> None:
    server = serve({"train": [FakeTask("store")]})
    body = json.dumps({"split": "train"}).encode()
    padded = body + b" " * (MAX_BODY_BYTES - len(body))

    answer = httpx.post(
        f"{server.url}/tasks/num_tasks",
        content=padded,
        headers={"Content-Type": "application/json"},
        timeout=ANSWER_S,
    )

    assert answer.status_code == 200, answer.text
    assert answer.json() == {"num_tasks": 1}


@pytest.mark.parametrize("route", ROUTES_WITH_BODIES)
def test_a_body_that_does_not_fit_its_route_is_a_422_naming_each_problem_without_the_input(
    serve: Serve, route: str
) -> None:
    server = serve({"train": [FakeTask("store")]})
    wrong = {name: [SECRET * 1000] for name in ("split", "index", "start", "stop")}

    answer = httpx.post(server.url + route, json=wrong, timeout=ANSWER_S)

    assert answer.status_code == 422
    assert SECRET not in answer.text
    problems: list[dict[str, Any]] = answer.json()["detail"]
    assert problems and all(set(problem) == {"type", "loc", "msg"} for problem in problems)
    assert ["body", "split"] in [problem["loc"] for problem in problems]


@pytest.mark.parametrize("sent", [(SECRET * 1000).encode(), b'{"split": "' + SECRET.encode() * 1000])
def test_a_body_that_is_not_json_is_a_422_that_does_not_echo_it(serve: Serve, sent: bytes) -> None:
    server = serve({"train": [FakeTask("store")]})

    answer = httpx.post(
        f"{server.url}/tasks/num_tasks",
        content=sent,
        headers={"Content-Type": "application/json"},
        timeout=ANSWER_S,
    )

    assert answer.status_code == 422
    assert SECRET not in answer.text
    assert [problem["type"] for problem in answer.json()["detail"]] == ["json_invalid"]


def test_a_key_the_route_does_not_take_is_named_in_the_422_cut_short(serve: Serve) -> None:
    server = serve({"train": [FakeTask("store")]})

    answer = httpx.post(
        f"{server.url}/tasks/num_tasks", json={"split": "train", "k" * 5000: 1}, timeout=ANSWER_S
    )

    assert answer.status_code == 422
    assert [problem["loc"] for problem in answer.json()["detail"]] == [["body", "k" * 100 + "..."]]
    assert len(answer.content) < 1000

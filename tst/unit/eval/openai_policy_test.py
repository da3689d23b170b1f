"""`OpenAIPolicy`: what a model endpoint that answers 200 with something other than a chat
completion, or never finishes its answer, makes of one request."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from agent_env.eval import OpenAIPolicy, PolicyError
from tst.support.chat_stand_in import API_KEY, MODEL, eval_ids, start_stand_in
from tst.support.wharf import WHARF

pytestmark = pytest.mark.needs("eval_installed")

STORE = eval_ids()[0]
BOUND_S = 30.0
"""How long a test waits for the policy's answer before it fails: a hang fails, it does not hang."""


def first_request() -> list[dict[str, Any]]:
    from agent_env import load_bundle

    return [{"role": "user", "content": load_bundle(WHARF).tasks("eval")[0].turns[0]}]


def answer_of(policy: OpenAIPolicy) -> tuple[BaseException | None, float]:
    """What one request raised (None if it answered) and how long it took, waited on for BOUND_S."""
    raised: list[BaseException | None] = []

    def ask() -> None:
        try:
            policy(first_request(), [])
            raised.append(None)
        except BaseException as exc:  # the test reads whatever it was
            raised.append(exc)

    started = time.monotonic()
    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    asking.join(BOUND_S)
    assert raised, f"the request had no answer after {BOUND_S:g} s"
    return raised[0], time.monotonic() - started


def test_an_answer_that_trickles_in_byte_by_byte_is_a_policy_error_at_the_request_s_deadline(serve):
    _, url = start_stand_in(serve, broken={STORE: "slow"})
    policy = OpenAIPolicy(url, MODEL, api_key=API_KEY, request_timeout_s=1.5)

    raised, seconds = answer_of(policy)

    assert isinstance(raised, PolicyError)
    assert f"the endpoint at {url} sent no complete answer within 1.5 s" in str(raised)
    assert "--request-timeout" in str(raised)
    assert 1.5 <= seconds < 4.0


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("not-json", 'sent something that is not JSON: \'{"id": "chatcmpl-1", "object"'),
        ("garbage", "sent something that is not JSON: '<html><body><h1>502 Bad Gateway</h1>"),
        ("not-a-completion", 'sent JSON that is not a chat completion (no choices): \'{"object": "list"'),
        ("huge", "sent more than 4 MiB for one answer"),
    ],
)
def test_an_answer_that_is_not_a_chat_completion_is_a_policy_error_naming_the_endpoint_and_what_it_sent(
    serve, how, said
):
    scripted, url = start_stand_in(serve, broken={STORE: how})
    policy = OpenAIPolicy(url, MODEL, api_key=API_KEY, max_retries=0)

    raised, _ = answer_of(policy)

    assert isinstance(raised, PolicyError), repr(raised)
    assert f"the endpoint at {url} {said}" in str(raised)
    assert len(str(raised)) < 600
    assert len(scripted.requests) == 1


def test_a_policy_collected_unclosed_on_the_endpoint_s_loop_leaves_the_connections_opened_after_it_reading(
    serve,
):
    # The SDK's default HTTP client closed itself once collected, on the loop, after the collector had
    # freed its sockets' numbers: a connection opened meanwhile on a freed number lost its reader, and
    # its request waited, silent, until its deadline (a hang seen in CI).
    import asyncio
    import gc
    import socket

    from agent_env.eval import _openai_policy as openai_policy

    _, url = start_stand_in(serve)
    lost = 0
    for _ in range(5):
        dropped = [OpenAIPolicy(url, MODEL, api_key=API_KEY) for _ in range(2)]
        for policy in dropped:
            policy(first_request(), [])

        async def collect_then_listen(dropped: list[OpenAIPolicy]) -> bytes | None:
            loop = asyncio.get_running_loop()
            dropped.clear()
            gc.collect()  # the policies' connections are collected here, on the endpoint's loop
            mine, theirs = socket.socketpair()
            heard: asyncio.Future[bytes] = loop.create_future()
            loop.add_reader(mine.fileno(), lambda: heard.done() or heard.set_result(mine.recv(16)))
            await asyncio.sleep(0.1)
            theirs.send(b"ping")
            try:
                return await asyncio.wait_for(heard, 2.0)
            except TimeoutError:
                return None
            finally:
                loop.remove_reader(mine.fileno())
                mine.close()
                theirs.close()

        lost += openai_policy._within(BOUND_S, collect_then_listen(dropped)) is None
    assert lost == 0, f"{lost} of 5 readers opened after a policy was collected never heard their data"


def test_a_closed_policy_closes_its_connections_and_refuses_to_play_saying_to_make_a_new_one(serve, recwarn):
    import gc

    from agent_env._error_types import StateError

    _, url = start_stand_in(serve)
    gc.collect()
    recwarn.clear()  # what earlier code left for the collector is not this policy's
    with OpenAIPolicy(url, MODEL, api_key=API_KEY) as policy:
        assert answer_of(policy)[0] is None
    policy.close()  # again: nothing happens

    with pytest.raises(StateError, match="was closed: make a new one to play again"):
        policy(first_request(), [])
    del policy
    gc.collect()
    assert not [str(w.message) for w in recwarn if issubclass(w.category, ResourceWarning)]

"""Fuzzing: the Task API from its own OpenAPI schema (schemathesis), the WebSocket's actions from a
strategy of any JSON (hypothesis). No request may get a 500, and no action may end a session.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings, strategies as st
from schemathesis import APIOperation, Case, GenerationMode
from schemathesis.checks import not_a_server_error

from agent_env.openenv import BackgroundServer, build_served_app
from agent_env.testing import fake_served
from tst.reliability._raw import Raw, dock, observation, play_on, status
from tst.support.waiting import until

EXAMPLES = 60
TASKS = {"train": [dock("quay"), dock("belt")], "eval": [dock("dry-dock")]}
APP = build_served_app(fake_served(TASKS))
# The schema the app serves at /openapi.json, read at collection so each operation is a test of its own.
# schemathesis is driven through its documented strategies (`as_strategy`, with `@given`), not its pytest
# plugin, which reaches into pytest's private node attributes and broke with pytest 9.2.
OPERATIONS = [result.ok() for result in schemathesis.openapi.from_dict(APP.openapi()).get_all_operations()]
PINNED = {"env_name": "tasks"}
"""The served environment's name, so generated requests reach the handlers rather than a 404."""


def sendable(operation: APIOperation) -> int:
    """How many parts of a request the client chooses (the pinned name aside): none leaves nothing to
    get wrong, so such an operation has no request that nearly fits its schema."""
    paths = [p for p in operation.path_parameters if p.name not in PINNED]
    return len(paths) + len(operation.query) + len(operation.headers) + len(operation.body)


CASES = [
    pytest.param(operation, mode, id=f"{operation.label} {mode}")
    for operation in OPERATIONS
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if mode is GenerationMode.POSITIVE or sendable(operation)
]


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    served = BackgroundServer(APP).start()
    yield served
    served.stop()


@pytest.mark.parametrize(("operation", "mode"), CASES)
def test_no_request_the_task_apis_schema_allows_or_nearly_allows_gets_a_server_error(
    operation: APIOperation, mode: GenerationMode, server: BackgroundServer
) -> None:
    named = {k: v for k, v in PINNED.items() if f"{{{k}}}" in operation.path}

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(case=operation.as_strategy(generation_mode=mode, path_parameters=named or None))
    def answered_without_a_server_error(case: Case) -> None:
        case.call_and_validate(base_url=server.url, checks=[not_a_server_error], timeout=30)

    answered_without_a_server_error()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
KINDS = st.sampled_from(["call_tool", "end_turn", "list_tools", "dance", ""]) | st.text(max_size=12)
TOOLS = st.sampled_from(["add_crate", "bash", "reset", ""]) | st.text(max_size=12)
ACTIONS = st.fixed_dictionaries(
    {"kind": KINDS},
    optional={
        "tool": TOOLS,
        "arguments": st.dictionaries(st.sampled_from(["crate", "bay", "kind", "x"]), JSON, max_size=4) | JSON,
        "reply": JSON,
        "metadata": st.fixed_dictionaries({}, optional={"timeout_s": JSON}) | JSON,
        "extra": JSON,
    },
)


@settings(max_examples=EXAMPLES * 3, deadline=None, suppress_health_check=list(HealthCheck))
@given(actions=st.lists(ACTIONS, min_size=1, max_size=5))
def test_any_json_as_an_action_is_answered_and_the_session_plays_on(
    server: BackgroundServer, actions: list[dict[str, Any]]
) -> None:
    raw = Raw(server.url)
    try:
        observation(raw.ask("reset", {"split": "train", "index": 0}))
        for action in actions:
            raw.send(json.dumps({"type": "step", "data": action}))
            answer = raw.answer()
            assert answer["type"] in ("observation", "error"), answer
            if answer["type"] == "observation" and answer["data"]["done"]:
                observation(raw.ask("reset", {"split": "train", "index": 0}))
        observation(raw.ask("reset", {"split": "train", "index": 1}))
        scored = play_on(raw)
        assert (scored["done"], scored["reward"]) == (True, 1.0)
    finally:
        raw.close()
    assert until(lambda: status(server)["live_episodes"] == 0)

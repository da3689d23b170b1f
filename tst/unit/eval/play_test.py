"""`play_sample`: one task played over the wire, here for the deadlines each of its calls is sent with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_env import Tool
from agent_env._specs import ScriptedCall, ScriptedTurn, Solution
from agent_env.client._taskapi import TaskAPI
from agent_env.eval import AssistantMessage, Message, PlaySettings, ScriptedPolicy, play_sample
from agent_env.openenv import build_served_app
from agent_env.testing import FakeTask, fake_served
from tst.support.bundles import a_task, make_bundle
from tst.support.frames import NoOpenTurnInstead, RecordFrames
from tst.support.serving import Serve
from tst.support.tools import add_crate, list_crates

pytestmark = pytest.mark.needs("eval_installed")

SHELVING_READER = """
def reader(context, title):
    return None if title in context.envs["shelf"].books else f"{title}, please."
"""


def test_each_tool_call_is_sent_with_the_deadline_its_tool_lists_else_with_tool_timeout_s(
    serve: Serve,
) -> None:
    task = FakeTask("store", tools=[Tool.from_function(add_crate, timeout_s=7), list_crates])
    recorder = RecordFrames(build_served_app(fake_served({"train": [task]})))
    url = serve(recorder).url
    calls = [
        ScriptedCall(tool="add_crate", arguments={"crate": "C1", "bay": 2}),
        ScriptedCall(tool="list_crates"),
    ]
    script = Solution(id="store", turns=[ScriptedTurn(calls=calls, reply="Stored.")])

    played = play_sample(
        url,
        task.spec("train", 0),
        ScriptedPolicy(script),
        model=None,
        settings=PlaySettings(tool_timeout_s=20),
    )

    assert played.outcome.kind == "scored" and played.score == 1.0
    assert [turn.prompt_by for turn in played.turns] == ["task"]
    deploy, total = played.timings.deploy_s, played.timings.total_s
    assert deploy is not None and total is not None and 0 < deploy <= total, "eval keeps the deploy it timed"
    steps = recorder.of_type("step")
    sent = [(s["tool"], s["metadata"]["timeout_s"]) for s in steps if s["kind"] == "call_tool"]
    assert sent == [("add_crate", 7), ("list_crates", 20)]


def test_a_policy_that_raises_anything_makes_its_sample_an_error_of_the_policy_never_a_lost_session(
    serve: Serve,
) -> None:
    task = FakeTask("store", tools=[add_crate, list_crates])
    url = serve({"train": [task]}).url

    def broken(messages: list[Message], tools: list[dict[str, Any]]) -> AssistantMessage:
        raise json.JSONDecodeError("Expecting value", "<html>", 0)

    played = play_sample(url, task.spec("train", 0), broken, model=None)

    assert (played.outcome.kind, played.outcome.code, played.score) == ("error", "POLICY_ERROR", None)
    assert (
        played.outcome.reason
        == "the policy raised JSONDecodeError: Expecting value: line 1 column 1 (char 0)"
    )


def test_an_error_answer_with_no_open_turn_ends_the_sample_as_the_servers_failure(serve: Serve) -> None:
    task = FakeTask("store", tools=[add_crate, list_crates])
    url = serve(NoOpenTurnInstead(build_served_app(fake_served({"train": [task]})))).url
    calls = [ScriptedCall(tool="add_crate", arguments={"crate": "C1", "bay": 2})]
    script = Solution(id="store", turns=[ScriptedTurn(calls=calls, reply="Stored.")])

    played = play_sample(url, task.spec("train", 0), ScriptedPolicy(script), model=None)

    assert (played.outcome.kind, played.outcome.code, played.score) == ("failed", "NO_OPEN_TURN", None)
    assert played.outcome.reason == "no turn is open: the episode ended (failed)"


def test_a_turn_a_simulated_user_wrote_is_recorded_as_the_simulated_user_s(
    serve: Serve, tmp_path: Path
) -> None:
    from agent_env.openenv import build_app

    reader = {"function": "reader", "args": {"title": "Dune"}, "max_turns": 3}
    task = a_task(id="t1", turns=["I would like a book shelved."], user=reader)
    root = make_bundle(tmp_path / "shelf", tasks={"train": [task]}, files={"users.py": SHELVING_READER})
    url = serve(build_app(root)).url
    script = Solution(
        id="t1",
        turns=[
            ScriptedTurn(reply="Which book?"),
            ScriptedTurn(
                calls=[ScriptedCall(tool="put_book", arguments={"title": "Dune"})], reply="Shelved."
            ),
        ],
    )
    spec = TaskAPI(url).tasks("train")[0]

    played = play_sample(url, spec, ScriptedPolicy(script), model=None)

    assert played.score == 1.0
    assert [(turn.prompt, turn.prompt_by) for turn in played.turns] == [
        ("I would like a book shelved.", "task"),
        ("Dune, please.", "simulated user"),
    ]

"""The TRL helper against a real OpenEnv server on loopback, driven the way TRL 1.16 drives it.

TRL calls the factory with no argument, resets each rollout with its dataset row (without the
`environment` column in multi-environment mode), calls the public functions it found on the class
as tools with keyword arguments, and reads `get_reward` once per rollout; instances are reused.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import socket
import threading
import time
import typing
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import pytest

from agent_env import ServedTask, Tool
from agent_env.openenv import build_served_app
from agent_env.testing import FakeTask, Gate, calls, fake_served
from agent_env.training.trl import (
    TASK_OVER,
    AgentEnv,
    ServerAtCapacityError,
    ServerUnavailableError,
    ToolCallError,
    UnknownSplitError,
    UnsupportedToolError,
)
from tst.support.frames import NoOpenTurnInstead, RecordFrames
from tst.support.serving import Serve
from tst.support.tools import add_crate, jam_crane, list_crates
from tst.support.waiting import until
from tst.unit.openenv._leak import leak_a_session, with_a_session_leak
from tst.unit.training._trl import Open, dock_task, trl_tools

pytestmark = pytest.mark.needs("trl_installed")


def add_item(item: str, quantity: int) -> str:
    """Add units of an item to the pantry.

    Args:
        item: The item's name.
        quantity: How many units to add.
    """
    return f"added {quantity} {item}"


def pantry_task(task_id: str = "stock") -> FakeTask:
    return FakeTask(task_id, tools=[add_item], envs=("pantry",), turns=("Add 2 flour.",), score=0.5)


def row_of(env: AgentEnv, index: int) -> dict[str, Any]:
    """The dataset row TRL resets with: every column but `environment`."""
    return {k: v for k, v in env.dataset[index].items() if k != "environment"}


def test_the_dataset_has_one_row_per_task_of_the_split_with_its_chat_prompt_split_and_index(
    serve: Serve, open_env: Open
) -> None:
    tasks = [dock_task("a"), dock_task("b", turns=("Store C2.", "Now move it."))]
    server = serve({"train": tasks, "eval": [dock_task("c")]})

    env = open_env(server.url)

    assert env.dataset.column_names == ["prompt", "split", "index"]
    assert env.dataset.to_list() == [
        {
            "prompt": [
                {"role": "system", "content": "You work on the dock."},
                {"role": "user", "content": "Store crate C1 in bay 2."},
            ],
            "split": "train",
            "index": 0,
        },
        {
            "prompt": [
                {"role": "system", "content": "You work on the dock."},
                {"role": "user", "content": "Store C2."},
            ],
            "split": "train",
            "index": 1,
        },
    ]
    assert [(r["split"], r["index"]) for r in env.dataset_for("eval")] == [("eval", 0)]


def test_the_factory_is_one_class_whose_public_functions_are_the_tools_and_end_turn_typed_and_documented(
    serve: Serve, open_env: Open
) -> None:
    env = open_env(serve({"train": [dock_task()]}).url)

    factory = env.factory

    assert isinstance(factory, type) and factory.__name__ == "dock"
    public = sorted(n for n in dir(factory) if not n.startswith("_"))
    assert public == ["add_crate", "end_turn", "get_reward", "jam_crane", "list_crates", "reset"]
    environment = factory()
    assert sorted(trl_tools(environment)) == ["add_crate", "end_turn", "jam_crane", "list_crates"]
    tool = trl_tools(environment)["add_crate"]
    assert tool.__name__ == "add_crate"
    parameters = inspect.signature(tool).parameters
    assert list(parameters) == ["crate", "bay", "kind"]
    assert typing.get_type_hints(tool) == {
        "crate": str,
        "bay": int,
        "kind": Literal["dry", "cold"],
    }
    assert parameters["kind"].default == "dry"
    assert parameters["crate"].default is inspect.Parameter.empty
    assert inspect.getdoc(tool) == (
        "Store a newly arrived crate in a bay.\n\nArgs:\n"
        '    crate: The crate\'s label, such as "C12".\n'
        "    bay: The bay to store it in.\n"
        "    kind: What the crate holds."
    )


def test_a_rollout_plays_on_the_server_and_a_reused_environment_scores_each_of_its_rollouts(
    serve: Serve, open_env: Open
) -> None:
    task = dock_task()
    env = open_env(serve({"train": [task]}).url)
    environment = env.factory()
    tools = trl_tools(environment)

    assert environment.reset(**row_of(env, 0)) is None
    assert tools["add_crate"](crate="C1", bay=2) == "stored dry crate C1 in bay 2"
    assert tools["list_crates"]() == "C1 in bay 2"
    assert tools["end_turn"](reply="Stored.") == TASK_OVER
    assert environment.get_reward() == 1.0

    environment.reset(**row_of(env, 0))
    assert tools["end_turn"](reply="I did nothing.") == TASK_OVER
    assert environment.get_reward() == 0.0

    rollouts = task.episodes  # the factory deployed none: the spec lists the tools
    assert [calls(e) for e in rollouts] == [
        [("add_crate", {"crate": "C1", "bay": 2}), ("list_crates", {})],
        [],
    ]
    assert [e.replies for e in rollouts] == [["Stored."], ["I did nothing."]]
    assert task.wait_all_torn_down()


def test_reset_returns_at_once_and_the_first_tool_call_waits_for_the_deploy(
    serve: Serve, open_env: Open
) -> None:
    deploy = Gate(held=False)
    task = dock_task(deploy_gate=deploy)
    env = open_env(serve({"train": [task]}).url)
    environment = env.factory()
    deploy.hold()

    environment.reset(**row_of(env, 0))
    answers: list[str] = []
    caller = threading.Thread(target=lambda: answers.append(environment.list_crates()))
    caller.start()

    assert deploy.wait_reached()
    caller.join(0.3)
    assert caller.is_alive() and answers == []
    deploy.release()
    caller.join(10)
    assert answers == ["C1 in bay 2"]


def test_end_turn_answers_with_the_next_turns_prompt_so_a_two_turn_task_plays_as_it_is(
    serve: Serve, open_env: Open
) -> None:
    task = dock_task(turns=("Store C1 in bay 2.", "Now list the crates."))
    env = open_env(serve({"train": [task]}).url)
    environment = env.factory()

    environment.reset(**row_of(env, 0))
    environment.add_crate(crate="C1", bay=2)
    assert environment.end_turn(reply="Stored.") == "Now list the crates."
    environment.list_crates()
    assert environment.end_turn(reply="C1 is in bay 2.") == TASK_OVER

    assert environment.get_reward() == 1.0
    assert task.episodes[-1].replies == ["Stored.", "C1 is in bay 2."]


def test_turns_the_model_leaves_open_end_with_an_empty_reply_when_the_reward_is_asked_for(
    serve: Serve, open_env: Open
) -> None:
    task = dock_task(turns=("Store C1 in bay 2.", "Now list the crates.", "Thank you."))
    env = open_env(serve({"train": [task]}).url)
    environment = env.factory()

    environment.reset(**row_of(env, 0))
    environment.add_crate(crate="C1", bay=2)

    assert environment.get_reward() == 1.0
    assert task.episodes[-1].replies == ["", "", ""]
    assert task.wait_all_torn_down()


def test_a_tool_error_reaches_the_model_as_the_tools_error_and_the_turn_stays_open(
    serve: Serve, open_env: Open
) -> None:
    env = open_env(serve({"train": [dock_task()]}).url)
    environment = env.factory()
    environment.reset(**row_of(env, 0))

    with pytest.raises(ToolCallError, match="the crane is jammed with C1 half lifted"):
        environment.jam_crane(crate="C1")
    with pytest.raises(ToolCallError, match="bay"):
        environment.add_crate(crate="C1", bay="two")
    with pytest.raises(TypeError, match="crate"):
        environment.add_crate(bay=2)
    assert environment.add_crate(crate="C1", bay=2) == "stored dry crate C1 in bay 2"
    assert environment.get_reward() == 1.0


def test_an_error_answer_with_no_open_turn_ends_the_episode_unscored_as_it_ends_an_eval_sample(
    serve: Serve, open_env: Open
) -> None:
    env = open_env(serve(NoOpenTurnInstead(build_served_app(fake_served({"train": [dock_task()]})))).url)
    environment = env.factory()
    environment.reset(**row_of(env, 0))

    with pytest.raises(ToolCallError, match="no turn is open"):
        environment.add_crate(crate="C1", bay=2)
    with pytest.raises(ToolCallError, match="cannot end the turn: the episode ended: NO_OPEN_TURN"):
        environment.end_turn(reply="Stored.")
    assert environment.get_reward() is None


def test_a_tool_that_misses_its_deadline_answers_at_once_and_leaves_its_episode_unscored(
    serve: Serve, open_env: Open
) -> None:
    crane = Gate()
    task = dock_task(tool_gates={"jam_crane": crane})
    env = open_env(serve({"train": [task]}).url, tool_timeouts={"jam_crane": 0.3})
    environment = env.factory()
    environment.reset(**row_of(env, 0))

    started = time.monotonic()
    with pytest.raises(ToolCallError, match=r"missed its deadline of 0\.3 s"):
        environment.jam_crane(crate="C1")
    assert time.monotonic() - started < 5  # the server answered, not the client's grace

    with pytest.raises(ToolCallError, match="DEADLINE_EXCEEDED"):
        environment.add_crate(crate="C1", bay=2)
    assert environment.get_reward() is None
    assert task.wait_all_torn_down()

    environment.reset(**row_of(env, 0))  # the environment goes on with the next rollout
    environment.add_crate(crate="C1", bay=2)
    assert environment.get_reward() == 1.0


def declaring(seconds: float, **options: Any) -> FakeTask:
    """The dock task whose `add_crate` declares a deadline of `seconds`; `options` are FakeTask's."""
    return dock_task(
        tools=[Tool.from_function(add_crate, timeout_s=seconds), list_crates, jam_crane], **options
    )


def sent_deadlines(recorder: RecordFrames) -> list[tuple[str, float]]:
    """Each tool call the server got, with the deadline its client sent."""
    steps = recorder.of_type("step")
    return [(s["tool"], s["metadata"]["timeout_s"]) for s in steps if s["kind"] == "call_tool"]


def test_a_tool_gets_the_deadline_it_lists_unless_tool_timeouts_names_it_and_others_get_tool_timeout(
    serve: Serve, open_env: Open
) -> None:
    recorder = RecordFrames(build_served_app(fake_served({"train": [declaring(7)]})))
    url = serve(recorder).url
    listing = open_env(url, tool_timeout_s=20)
    naming = open_env(url, tool_timeout_s=20, tool_timeouts={"add_crate": 3, "list_crates": 4})

    for env in (listing, naming):
        environment = env.factory()
        environment.reset(**row_of(env, 0))
        environment.add_crate(crate="C1", bay=2)
        environment.list_crates()
        assert environment.get_reward() == 1.0

    assert listing.dataset.column_names == ["prompt", "split", "index"]  # the rows are as they were
    assert sent_deadlines(recorder) == [
        ("add_crate", 7),
        ("list_crates", 20),
        ("add_crate", 3),
        ("list_crates", 4),
    ]


def test_a_tool_past_the_deadline_it_lists_ends_its_rollout_unscored_though_tool_timeout_is_longer(
    serve: Serve, open_env: Open
) -> None:
    crane = Gate()
    task = declaring(0.3, tool_gates={"add_crate": crane})
    env = open_env(serve({"train": [task]}).url, tool_timeout_s=60)
    environment = env.factory()
    environment.reset(**row_of(env, 0))

    started = time.monotonic()
    with pytest.raises(ToolCallError, match=r"missed its deadline of 0\.3 s \(the tool's own"):
        environment.add_crate(crate="C1", bay=2)
    assert time.monotonic() - started < 5  # the server's answer, not the client's 60 s

    assert environment.get_reward() is None
    assert task.wait_all_torn_down()


def test_a_reset_and_an_end_turn_carry_the_resets_deadline_so_end_turn_waits_for_the_score_past_a_tools(
    serve: Serve, open_env: Open
) -> None:
    verify = Gate()
    task = dock_task(verify_gate=verify)
    recorder = RecordFrames(build_served_app(fake_served({"train": [task]})))
    env = open_env(serve(recorder).url, reset_timeout_s=20, tool_timeout_s=0.3)
    environment = env.factory()
    environment.reset(**row_of(env, 0))
    environment.add_crate(crate="C1", bay=2)

    threading.Timer(1.0, verify.release).start()  # the verifiers take longer than a tool may
    assert environment.end_turn(reply="Stored.") == TASK_OVER
    assert environment.get_reward() == 1.0

    resets = recorder.of_type("reset")
    assert [reset["timeout_s"] for reset in resets] == [20]  # the rollout's: the factory deploys nothing
    steps = recorder.of_type("step")
    assert [(s["kind"], s["metadata"]["timeout_s"]) for s in steps] == [
        ("call_tool", 0.3),
        ("end_turn", 20),
    ]


def test_an_episode_that_fails_to_deploy_gives_no_reward_and_its_tools_say_why(
    serve: Serve, open_env: Open
) -> None:
    task = dock_task()
    env = open_env(serve({"train": [task]}).url)
    environment = env.factory()
    task.deploy_error = RuntimeError("the dock is flooded")

    environment.reset(**row_of(env, 0))

    with pytest.raises(ToolCallError, match=r"DEPLOY_FAILED.*the dock is flooded"):
        environment.list_crates()
    assert environment.get_reward() is None


def test_an_episode_whose_task_is_not_its_rows_gives_no_reward(serve: Serve, open_env: Open) -> None:
    env = open_env(serve({"train": [dock_task()]}).url)
    environment = env.factory()
    stale = row_of(env, 0)
    stale["prompt"] = [{"role": "user", "content": "Store crate C9 in bay 4."}]

    environment.reset(**stale)

    with pytest.raises(ToolCallError, match="is not the row's"):
        environment.add_crate(crate="C9", bay=4)
    assert environment.get_reward() is None


def test_reset_refuses_a_row_without_split_and_index_saying_which_dataset_has_them(
    serve: Serve, open_env: Open
) -> None:
    env = open_env(serve({"train": [dock_task()]}).url)

    with pytest.raises(TypeError, match=r"split \(str\) and index \(int\).*AgentEnv.dataset"):
        env.factory().reset(prompt=[{"role": "user", "content": "hi"}])


def test_agentenv_fails_at_once_when_no_server_answers_at_the_url() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    with pytest.raises(ServerUnavailableError, match=r"no agent_env server answers.*agent-env serve"):
        AgentEnv(f"http://127.0.0.1:{port}")


def test_an_unknown_split_fails_at_once_naming_the_splits_served(serve: Serve) -> None:
    server = serve({"train": [dock_task()], "eval": [dock_task()]})

    with pytest.raises(UnknownSplitError, match=r"unknown split 'test' \(splits: train \(1 task\), eval"):
        AgentEnv(server.url, split="test")


def test_a_server_at_its_session_limit_fails_the_reset_naming_how_to_raise_it(
    serve: Serve, open_env: Open
) -> None:
    env = open_env(serve({"train": [dock_task()]}, max_concurrent_envs=1).url)
    first, second = env.factory(), env.factory()
    first.reset(**row_of(env, 0))

    with pytest.raises(ServerAtCapacityError) as refused:
        second.reset(**row_of(env, 0))

    assert "MAX_CONCURRENT_ENVS" in str(refused.value)
    assert "max_concurrent_envs=" in str(refused.value)
    assert "(1 by WebSocket clients on /ws, 0 without a client)" in str(refused.value)
    assert "each rollout of a generation batch, per toolset" in str(refused.value)
    assert "restart" not in str(refused.value)
    first.add_crate(crate="C1", bay=2)
    assert first.get_reward() == 1.0


def test_a_server_full_of_sessions_no_client_holds_fails_the_reset_saying_a_restart_frees_them(
    serve: Serve, open_env: Open
) -> None:
    server = serve(
        with_a_session_leak(build_served_app(fake_served({"train": [dock_task()]}), max_concurrent_envs=2))
    )
    env = open_env(server.url)
    first, second = env.factory(), env.factory()
    leak_a_session(server)
    first.reset(**row_of(env, 0))

    with pytest.raises(ServerAtCapacityError) as refused:
        second.reset(**row_of(env, 0))

    assert str(refused.value) == (
        f"the server at {server.url} is at its session limit (Server at capacity: 2/2 sessions held (1 by "
        "WebSocket clients on /ws, 1 without a client). Cannot accept new connections.). 1 of its sessions "
        "is held with no client connected, which no client can free: restarting the server frees it. "
        "That is a bug of agent_env's server: please report it, with what the server's GET /<bundle>/status "
        "answers"
    )
    first.add_crate(crate="C1", bay=2)
    assert first.get_reward() == 1.0


def test_toolsets_that_differ_get_a_class_each_and_every_row_names_its_environment(
    serve: Serve, open_env: Open
) -> None:
    dock_a, stock, dock_b = dock_task("a"), pantry_task(), dock_task("b")
    env = open_env(serve({"train": [dock_a, stock, dock_b]}).url)

    factory = env.factory

    assert isinstance(factory, dict) and list(factory) == ["dock", "pantry"]
    assert [factory[name].__name__ for name in factory] == ["dock", "pantry"]
    assert env.dataset["environment"] == ["dock", "pantry", "dock"]
    assert [len(t.episodes) for t in (dock_a, stock, dock_b)] == [0, 0, 0]  # the specs list the tools
    assert sorted(trl_tools(factory["pantry"]())) == ["add_item", "end_turn"]

    unpickled = pickle.loads(pickle.dumps(factory))
    pantry = unpickled["pantry"]()
    pantry.reset(**row_of(env, 1))
    assert pantry.add_item(item="flour", quantity=2) == "added 2 flour"
    assert pantry.get_reward() == 0.5


def test_a_tool_name_trl_cannot_call_is_refused_when_the_factory_is_built(
    serve: Serve, open_env: Open
) -> None:
    badly_named = dataclasses.replace(Tool.from_function(list_crates), name="list-crates")
    env = open_env(serve({"train": [FakeTask("bad", tools=[badly_named])]}).url)

    refusal = r"toolset 'fake': tool 'list-crates' is not a name a trainer can call"
    with pytest.raises(UnsupportedToolError, match=refusal):
        env.factory  # noqa: B018


def test_dataset_for_a_split_with_a_toolset_the_factory_lacks_is_refused(
    serve: Serve, open_env: Open
) -> None:
    env = open_env(serve({"train": [dock_task()], "eval": [pantry_task()]}).url)

    with pytest.raises(ValueError, match=r"split 'eval' has tasks of toolsets \(pantry\)"):
        env.dataset_for("eval")


def test_closing_an_agentenv_ends_the_episodes_of_its_classes_rebuilt_from_pickles_and_no_others(
    serve: Serve, open_env: Open
) -> None:
    task = dock_task()
    url = serve({"train": [task]}).url
    mine, other = open_env(url), open_env(url)
    rebuilt = pickle.loads(pickle.dumps(mine.factory))
    mine_playing, others_playing = rebuilt(), other.factory()
    for environment, env in ((mine_playing, mine), (others_playing, other)):
        environment.reset(**row_of(env, 0))
        environment.list_crates()

    mine.close()

    assert until(lambda: len(task.live) == 1)
    assert others_playing.add_crate(crate="C1", bay=2) == "stored dry crate C1 in bay 2"
    assert others_playing.get_reward() == 1.0
    assert mine_playing.get_reward() is None
    with pytest.raises(RuntimeError, match="closed"):
        mine_playing.reset(**row_of(mine, 0))


def test_environments_play_at_once_from_a_thread_pool_as_asyncgrpos_rollout_threads_call_them(
    serve: Serve, open_env: Open
) -> None:
    deploy = Gate(held=False)
    task = dock_task(deploy_gate=deploy)
    server = serve({"train": [task]})
    env = open_env(server.url)
    environments = [env.factory() for _ in range(8)]
    row = row_of(env, 0)
    deploy.hold()

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda environment: environment.reset(**row), environments))
        assert deploy.wait_reached()
        assert until(lambda: len(task.live) == 8)  # every rollout's session open and deploying at once
        deploy.release()
        stored = [pool.submit(e.add_crate, crate="C1", bay=2) for e in environments[:4]]
        listed = [pool.submit(e.list_crates) for e in environments for _ in range(3)]
        assert {f.result(timeout=30) for f in stored} == {"stored dry crate C1 in bay 2"}
        assert {f.result(timeout=30) for f in listed} == {"C1 in bay 2"}
        rewards = list(pool.map(lambda environment: environment.get_reward(), environments))

    assert rewards == [1.0] * 4 + [0.0] * 4
    assert until(lambda: task.live == [])


def test_tool_timeouts_naming_a_tool_no_toolset_has_is_refused_when_the_factory_is_built(
    serve: Serve, open_env: Open
) -> None:
    env = open_env(serve({"train": [dock_task()]}).url, tool_timeouts={"add_crates": 5})

    with pytest.raises(
        ValueError, match=r"tool_timeouts names tools no toolset .* has: add_crates \(tools: add_crate,"
    ):
        env.factory  # noqa: B018


def test_serving_an_app_plays_its_tasks_in_process_and_close_ends_its_episodes_and_stops_it() -> None:
    task = dock_task()
    env = AgentEnv.serving(build_served_app(fake_served({"train": [task]})))
    try:
        environment = env.factory()
        environment.reset(**row_of(env, 0))
        assert environment.add_crate(crate="C1", bay=2) == "stored dry crate C1 in bay 2"
        assert len(task.live) == 1
    finally:
        env.close()

    assert until(lambda: task.live == [])
    with pytest.raises(ServerUnavailableError):
        AgentEnv(env.url, connect_timeout_s=2)


def test_a_toolset_whose_spec_leaves_its_tools_to_the_deploy_is_listed_by_playing_one_of_its_tasks_once(
    serve: Serve, open_env: Open
) -> None:
    """The path kept for toolsets whose tools are known only once deployed (an MCP env's, say)."""
    task = dock_task()
    placed = task.task_at("train", 0)
    spec = placed.spec.model_copy(update={"toolset": placed.spec.toolset.model_copy(update={"tools": None})})
    served = {"train": (ServedTask(spec, lambda: task.new_episode(placed)),)}
    env = open_env(serve(build_served_app(served)).url)

    factory = env.factory

    assert isinstance(factory, type)
    assert sorted(trl_tools(factory())) == ["add_crate", "end_turn", "jam_crane", "list_crates"]
    assert len(task.episodes) == 1
    assert task.wait_all_torn_down()


def test_a_toolset_listed_by_playing_one_of_its_tasks_brings_the_deadlines_its_tools_declare(
    serve: Serve, open_env: Open
) -> None:
    task = declaring(7)
    placed = task.task_at("train", 0)
    toolset = placed.spec.toolset.model_copy(update={"tools": None, "tool_timeouts": {}})
    served = {
        "train": (
            ServedTask(placed.spec.model_copy(update={"toolset": toolset}), lambda: task.new_episode(placed)),
        )
    }
    recorder = RecordFrames(build_served_app(served))
    env = open_env(serve(recorder).url, tool_timeout_s=20)

    environment = env.factory()
    environment.reset(**row_of(env, 0))
    environment.add_crate(crate="C1", bay=2)
    environment.list_crates()

    assert sent_deadlines(recorder) == [("add_crate", 7), ("list_crates", 20)]
    assert environment.get_reward() == 1.0


def test_a_deadline_keyword_without_its_s_is_a_type_error_naming_it_before_any_server_is_asked() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'reset_timeout'"):
        AgentEnv("http://127.0.0.1:9", reset_timeout=42)

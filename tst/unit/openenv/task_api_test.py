"""The Task API: what a trainer learns about the served tasks over HTTP, without deploying anything.

The wharf bundle is served as `build_app` serves any bundle; hand-built fake tasks cover what the
wharf has no example of (no system prompt, an empty split, bash with a role and access changes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

import agent_env
from agent_env import AccessChange, TaskSpec
from agent_env._contracts.sandbox import KILL_MARGIN_S
from agent_env.openenv import BackgroundServer, build_app, build_served_app
from agent_env.testing import FakeTask, fake_served
from tst.support.bundles import SHELF, a_task, make_bundle
from tst.support.serving import Connect, Serve
from tst.support.tools import add_crate, list_crates
from tst.support.wharf import WHARF

pytestmark = pytest.mark.needs("openenv_installed")

TRAIN = [json.loads(line) for line in (WHARF / "tasks" / "train.jsonl").read_text().splitlines()]
EVAL = [json.loads(line) for line in (WHARF / "tasks" / "eval.jsonl").read_text().splitlines()]
WHARF_SPLITS = f"eval ({len(EVAL)} tasks), train ({len(TRAIN)} tasks)"
DECKHAND = (
    "You are a deckhand on the harbor's dock. Use your tools to do what you are asked, then answer briefly."
)


def get(server: BackgroundServer, path: str) -> httpx.Response:
    return httpx.get(server.url + path, timeout=10)


def post(server: BackgroundServer, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=10)


def wharf_task(server: BackgroundServer, split: str, index: int) -> dict[str, Any]:
    answer = post(server, "/wharf/task", {"split": split, "index": index})
    assert answer.status_code == 200, answer.text
    task: dict[str, Any] = answer.json()["task"]
    return task


def plain_task() -> FakeTask:
    return FakeTask("count-crates", tools=[list_crates], turns=("How many crates are there?",))


def rich_task() -> FakeTask:
    return FakeTask(
        "ship-and-log",
        tools=[add_crate],
        system_prompt="You are the harbormaster.",
        turns=("Ship crate C1.", "Now write it in the log."),
        envs=("dock", "pantry"),
        role="harbormaster",
        access=(
            AccessChange(action="enable", role="harbormaster", tools=("remove_crate",)),
            AccessChange(action="disable", role="harbormaster", tools="*", env="pantry"),
        ),
        bash=True,
    )


# The wharf bundle


def test_the_wharf_is_listed_by_its_bundle_name_with_its_train_and_eval_splits(serve: Serve) -> None:
    server = serve(build_app(WHARF))

    environments = get(server, "/list_environments")
    splits = get(server, "/wharf/splits")

    assert environments.status_code == 200 and environments.json() == ["wharf"]
    assert splits.status_code == 200
    assert splits.json() == [{"name": "eval", "type": "validation"}, {"name": "train", "type": "train"}]


def test_the_wharf_counts_and_lists_every_task_of_a_split_in_its_file_order(serve: Serve) -> None:
    server = serve(build_app(WHARF))

    counts = {split: post(server, "/wharf/num_tasks", {"split": split}).json() for split in ("train", "eval")}
    listed = post(server, "/wharf/tasks", {"split": "train"}).json()

    assert counts == {"train": {"num_tasks": len(TRAIN)}, "eval": {"num_tasks": len(EVAL)}}
    assert listed["env_name"] == "wharf"
    assert [task["id"] for task in listed["tasks"]] == [entry["id"] for entry in TRAIN]
    assert [(task["split"], task["index"]) for task in listed["tasks"]] == [
        ("train", i) for i in range(len(TRAIN))
    ]


def without_tools(spec: dict[str, Any]) -> dict[str, Any]:
    """A task spec with its toolset's names alone (its tools and their deadlines are the subject of
    their own tests)."""
    toolset = {k: v for k, v in spec["toolset"].items() if k not in ("tools", "tool_timeouts")}
    return {**spec, "toolset": toolset}


def test_each_task_spec_carries_its_toolset_s_tool_schemas_exactly_as_its_episode_lists_them(
    serve: Serve, connect: Connect
) -> None:
    server = serve(build_app(WHARF))
    client = connect(server.url)

    for index in (0, 4, 5, 10):
        listed = client.reset(split="train", index=index).observation["tools"]

        assert wharf_task(server, "train", index)["toolset"]["tools"] == listed


def test_bash_lists_its_deadline_as_the_bundle_s_command_timeout_plus_the_kill_margin_in_spec_and_reset(
    serve: Serve, connect: Connect
) -> None:
    server = serve(build_app(WHARF))
    command_timeout_s = agent_env.load_bundle(WHARF).config.sandbox.command_timeout_s
    index = next(i for i, entry in enumerate(TRAIN) if entry["agent"] == "clerk")
    client = connect(server.url)

    spec = wharf_task(server, "train", index)["toolset"]
    reset = client.reset(split="train", index=index).observation

    assert spec["bash"] is True
    assert spec["tool_timeouts"] == {"bash": command_timeout_s + KILL_MARGIN_S}
    assert reset["tool_timeouts"] == spec["tool_timeouts"]
    assert reset["tools"] == spec["tools"] and spec["tools"][-1] == agent_env.BASH_TOOL


def test_a_wharf_task_spec_has_the_agents_system_prompt_then_the_first_turn_and_counts_the_turns(
    serve: Serve,
) -> None:
    server = serve(build_app(WHARF))

    one_turn = without_tools(wharf_task(server, "train", 0))
    two_turns = without_tools(wharf_task(server, "train", 2))

    assert one_turn == {
        "id": "store-crate-000",
        "split": "train",
        "index": 0,
        "prompt": [
            {"role": "system", "content": DECKHAND},
            {"role": "user", "content": TRAIN[0]["turns"][0]},
        ],
        "turns": 1,
        "user": None,
        "max_turns": 1,
        "toolset": {"name": "dock", "envs": ["dock"], "role": "default", "access": [], "bash": False},
        "verifiers": [{"type": "items", "weight": 1.0}],
    }
    assert two_turns["id"] == "store-then-move-000"
    assert two_turns["turns"] == 2 == len(TRAIN[2]["turns"])
    assert two_turns["prompt"] == [
        {"role": "system", "content": DECKHAND},
        {"role": "user", "content": TRAIN[2]["turns"][0]},
    ]


def test_wharf_toolsets_are_named_for_their_envs_bash_role_and_access_changes(serve: Serve) -> None:
    server = serve(build_app(WHARF))

    toolsets = {
        index: without_tools(wharf_task(server, "train", index))["toolset"] for index in (0, 4, 5, 9, 10)
    }

    assert toolsets[0] == {"name": "dock", "envs": ["dock"], "role": "default", "access": [], "bash": False}
    assert toolsets[4] == {
        "name": "dock[+remove_crate]",
        "envs": ["dock"],
        "role": "default",
        "access": [{"action": "enable", "role": "default", "tools": ["remove_crate"], "env": None}],
        "bash": False,
    }
    assert toolsets[5] == {
        "name": "dock@harbormaster",
        "envs": ["dock"],
        "role": "harbormaster",
        "access": [],
        "bash": False,
    }
    assert toolsets[9]["name"] == "dock+pantry" and toolsets[9]["envs"] == ["dock", "pantry"]
    assert toolsets[10] == {
        "name": "dock+bash",
        "envs": ["dock"],
        "role": "default",
        "access": [],
        "bash": True,
    }


def test_the_solutions_route_lists_each_wharf_task_s_reference_play_by_index_as_its_solutions_file_has_it(
    serve: Serve,
) -> None:
    server = serve(build_app(WHARF))
    written = [json.loads(line) for line in (WHARF / "solutions" / "eval.jsonl").read_text().splitlines()]

    answer = post(server, "/wharf/solutions", {"split": "eval"})

    assert answer.status_code == 200, answer.text
    assert answer.json()["env_name"] == "wharf"
    listed = answer.json()["solutions"]
    assert [solution["index"] for solution in listed] == [EVAL.index(task) for task in EVAL]
    assert [solution["script"] for solution in listed] == [
        {"expected_score": 1.0, **script} for script in written
    ]


def test_the_solutions_route_leaves_out_the_tasks_without_one_and_keeps_the_others_indices(
    serve: Serve,
) -> None:
    solved = FakeTask(
        "solved",
        tools=[list_crates],
        solution=agent_env.Solution(id="solved", turns=[{"calls": [{"tool": "list_crates"}], "reply": "1"}]),
    )
    server = serve({"train": [plain_task(), solved], "eval": [plain_task()]})

    train = post(server, "/tasks/solutions", {"split": "train"}).json()["solutions"]
    unsolved = post(server, "/tasks/solutions", {"split": "eval"}).json()["solutions"]

    assert train == [
        {
            "index": 1,
            "script": {
                "id": "solved",
                "turns": [{"calls": [{"tool": "list_crates", "arguments": {}}], "reply": "1"}],
                "expected_score": 1.0,
            },
        }
    ]
    assert unsolved == []


def test_a_task_range_slices_a_split_as_python_slices_a_list_from_index_0(serve: Serve) -> None:
    server = serve(build_app(WHARF))
    ids = [entry["id"] for entry in TRAIN]

    def sliced(**bounds: int | None) -> list[str]:
        answer = post(server, "/wharf/task_range", {"split": "train", **bounds})
        assert answer.status_code == 200, answer.text
        return [task["id"] for task in answer.json()["tasks"]]

    assert sliced(start=3, stop=6) == ids[3:6]
    assert sliced() == ids
    assert sliced(start=30) == ids[30:]
    assert sliced(stop=2) == ids[:2]
    assert sliced(start=30, stop=99) == ids[30:]
    assert sliced(start=5, stop=2) == []
    assert sliced(start=99) == []


@pytest.mark.parametrize(
    ("bounds", "named"), [({"start": -3}, "start -3"), ({"start": 0, "stop": -30}, "stop -30")]
)
def test_a_task_range_with_a_negative_start_or_stop_is_a_400_that_names_it_and_the_split_s_indices(
    serve: Serve, bounds: dict[str, int], named: str
) -> None:
    server = serve(build_app(WHARF))

    answer = post(server, "/wharf/task_range", {"split": "train", **bounds})

    assert answer.status_code == 400
    assert answer.json()["detail"] == (
        f"{named} is negative: a range's start and stop are indices of split 'train' ({len(TRAIN)} tasks: "
        f"0..{len(TRAIN) - 1}), never negative; leave stop out for the rest of it"
    )


def test_an_unknown_split_s_name_is_shown_cut_short(serve: Serve) -> None:
    server = serve(build_app(WHARF))

    answer = post(server, "/wharf/tasks", {"split": "v" * 100_000})

    assert answer.status_code == 404
    assert answer.json()["detail"] == f"unknown split '{'v' * 100}...' (splits: {WHARF_SPLITS})"


def test_every_task_a_range_returns_is_the_task_the_task_route_returns_at_its_index(serve: Serve) -> None:
    server = serve(build_app(WHARF))

    ranged = post(server, "/wharf/task_range", {"split": "eval", "start": 0, "stop": len(EVAL)}).json()[
        "tasks"
    ]

    assert ranged == [wharf_task(server, "eval", index) for index in range(len(EVAL))]
    assert ranged == post(server, "/wharf/tasks", {"split": "eval"}).json()["tasks"]


def test_an_unknown_split_is_a_404_that_lists_the_served_splits_on_every_route(serve: Serve) -> None:
    server = serve(build_app(WHARF))
    routes = {
        "/wharf/tasks": {"split": "validation"},
        "/wharf/num_tasks": {"split": "validation"},
        "/wharf/task": {"split": "validation", "index": 0},
        "/wharf/task_range": {"split": "validation", "start": 0, "stop": 2},
        "/wharf/solutions": {"split": "validation"},
    }

    answers = {route: post(server, route, body) for route, body in routes.items()}

    assert {route: answer.status_code for route, answer in answers.items()} == dict.fromkeys(routes, 404)
    assert {route: answer.json()["detail"] for route, answer in answers.items()} == dict.fromkeys(
        routes, f"unknown split 'validation' (splits: {WHARF_SPLITS})"
    )


def test_an_index_past_either_end_of_a_split_is_a_400_that_names_the_index_and_the_range(
    serve: Serve,
) -> None:
    server = serve(build_app(WHARF))

    past_end = post(server, "/wharf/task", {"split": "eval", "index": len(EVAL)})
    negative = post(server, "/wharf/task", {"split": "eval", "index": -1})
    last = post(server, "/wharf/task", {"split": "eval", "index": len(EVAL) - 1})

    assert past_end.status_code == 400
    assert past_end.json()["detail"] == (
        f"index {len(EVAL)} is out of range for split 'eval' ({len(EVAL)} tasks: 0..{len(EVAL) - 1})"
    )
    assert negative.status_code == 400
    assert negative.json()["detail"] == (
        f"index -1 is out of range for split 'eval' ({len(EVAL)} tasks: 0..{len(EVAL) - 1})"
    )
    assert last.status_code == 200 and last.json()["task"]["id"] == EVAL[-1]["id"]


def test_an_index_that_is_not_a_number_is_refused_before_any_task_is_looked_up(serve: Serve) -> None:
    server = serve(build_app(WHARF))

    answer = post(server, "/wharf/task", {"split": "eval", "index": "first"})

    assert answer.status_code == 422
    assert answer.json()["detail"][0]["loc"] == ["body", "index"]


def test_a_route_under_another_environments_name_is_a_404_naming_that_environment(serve: Serve) -> None:
    server = serve(build_app(WHARF))

    splits = get(server, "/galley/splits")
    tasks = post(server, "/galley/tasks", {"split": "train"})
    status = get(server, "/galley/status")
    any_case = get(server, "/WHARF/status")

    assert splits.status_code == 404 and splits.json()["detail"] == "unknown environment 'galley'"
    assert tasks.status_code == 404 and tasks.json()["detail"] == "unknown environment 'galley'"
    assert status.status_code == 404 and status.json()["detail"] == "unknown environment 'galley'"
    assert any_case.status_code == 200 and any_case.json()["env_name"] == "wharf"


def test_a_given_env_name_replaces_the_bundle_name_made_safe_for_a_url_path(serve: Serve) -> None:
    server = serve(build_app(WHARF, env_name="wharf v2!"))

    environments = get(server, "/list_environments").json()
    counted = post(server, "/wharf-v2/num_tasks", {"split": "eval"})
    status = get(server, "/wharf-v2/status")
    old_name = get(server, "/wharf/splits")

    assert environments == ["wharf-v2"]
    assert counted.status_code == 200 and counted.json() == {"num_tasks": len(EVAL)}
    assert status.status_code == 200 and status.json()["env_name"] == "wharf-v2"
    assert old_name.status_code == 404


def test_the_metadata_route_names_the_bundle_with_its_description_and_the_agent_env_version(
    serve: Serve,
) -> None:
    server = serve(build_app(WHARF))

    metadata = get(server, "/metadata").json()

    assert metadata["name"] == "wharf"
    assert metadata["description"] == agent_env.load_bundle(WHARF).config.description
    assert metadata["version"] == agent_env.__version__


def test_the_status_route_reports_an_idle_server_and_its_capacity(serve: Serve) -> None:
    server = serve(build_app(WHARF, max_concurrent_envs=5))

    status = get(server, "/wharf/status")

    answered = status.json()
    fingerprint = answered.pop("tasks_fingerprint")  # its value: the fingerprint's own test

    assert status.status_code == 200
    assert fingerprint.startswith("sha256:")
    assert answered == {
        "env_name": "wharf",
        "connections": 0,
        "live_episodes": 0,
        "live_sandboxes": 0,
        "tearing_down": 0,
        "max_concurrent_envs": 5,
        "sessions": {"held": 0, "websocket": 0, "without_client": 0},
        "shutting_down": False,
        "warm_pool": None,
    }


def test_the_schema_route_publishes_the_action_observation_and_state_a_client_speaks(serve: Serve) -> None:
    server = serve(build_app(WHARF))

    schema = get(server, "/schema").json()

    action = schema["action"]
    assert action["properties"]["kind"]["enum"] == ["call_tool", "end_turn", "list_tools"]
    assert action["required"] == ["kind"]
    assert {"tool", "arguments", "reply", "metadata"} <= set(action["properties"])
    assert {
        "task_id",
        "turn",
        "turns",
        "prompt",
        "tools",
        "result",
        "verifier_scores",
        "error",
        "done",
    } <= set(schema["observation"]["properties"])
    phases = ["idle", "deploying", "turn_open", "verifying", "ended"]
    assert schema["state"]["properties"]["phase"]["enum"] == phases


def test_the_wharfs_task_api_deploys_no_episode(serve: Serve) -> None:
    server = serve(build_app(WHARF))

    answers = [get(server, "/wharf/splits")]
    for split in ("train", "eval"):
        answers += [
            post(server, "/wharf/tasks", {"split": split}),
            post(server, "/wharf/num_tasks", {"split": split}),
            post(server, "/wharf/task", {"split": split, "index": 0}),
            post(server, "/wharf/task_range", {"split": split}),
            post(server, "/wharf/solutions", {"split": split}),
        ]
    status = get(server, "/wharf/status").json()

    assert [answer.status_code for answer in answers] == [200] * 11
    assert (status["live_episodes"], status["tearing_down"], status["connections"]) == (0, 0, 0)


def test_http_reset_and_step_are_not_served_so_no_request_deploys_an_episode(serve: Serve) -> None:
    task = FakeTask("crates", tools=[add_crate])
    server = serve({"train": [task]})

    reset = post(server, "/reset", {"split": "train", "index": 0})
    step = post(server, "/step", {"action": {"kind": "list_tools"}})

    assert reset.status_code == 404
    assert step.status_code == 404
    assert task.episodes == []
    assert get(server, "/tasks/status").json()["live_episodes"] == 0


# Hand-built tasks


def test_hand_built_tasks_are_served_under_the_default_name_with_their_splits_in_order(serve: Serve) -> None:
    server = serve({"train": [plain_task(), rich_task()], "test": [plain_task()], "holdout": []})

    environments = get(server, "/list_environments").json()
    splits = get(server, "/tasks/splits").json()
    counts = [post(server, "/tasks/num_tasks", {"split": s["name"]}).json()["num_tasks"] for s in splits]

    assert environments == ["tasks"]
    assert splits == [
        {"name": "train", "type": "train"},
        {"name": "test", "type": "test"},
        {"name": "holdout", "type": "validation"},
    ]
    assert counts == [2, 1, 0]


def test_a_task_without_a_system_prompt_is_prompted_with_its_first_turn_alone(serve: Serve) -> None:
    server = serve({"train": [plain_task()]})

    task = without_tools(post(server, "/tasks/task", {"split": "train", "index": 0}).json()["task"])

    assert task == {
        "id": "count-crates",
        "split": "train",
        "index": 0,
        "prompt": [{"role": "user", "content": "How many crates are there?"}],
        "turns": 1,
        "user": None,
        "max_turns": 1,
        "toolset": {"name": "fake", "envs": ["fake"], "role": "default", "access": [], "bash": False},
        "verifiers": [{"type": "function", "weight": 1.0}],
    }


def test_a_task_with_a_system_prompt_two_turns_a_role_access_changes_and_bash_describes_them_all(
    serve: Serve,
) -> None:
    server = serve({"train": [plain_task(), rich_task()]})

    task = without_tools(post(server, "/tasks/task", {"split": "train", "index": 1}).json()["task"])

    assert task == {
        "id": "ship-and-log",
        "split": "train",
        "index": 1,
        "prompt": [
            {"role": "system", "content": "You are the harbormaster."},
            {"role": "user", "content": "Ship crate C1."},
        ],
        "turns": 2,
        "user": None,
        "max_turns": 2,
        "toolset": {
            "name": "dock+pantry+bash@harbormaster[+remove_crate,-pantry.*]",
            "envs": ["dock", "pantry"],
            "role": "harbormaster",
            "access": [
                {"action": "enable", "role": "harbormaster", "tools": ["remove_crate"], "env": None},
                {"action": "disable", "role": "harbormaster", "tools": "*", "env": "pantry"},
            ],
            "bash": True,
        },
        "verifiers": [{"type": "function", "weight": 1.0}],
    }


def test_the_same_task_in_two_splits_is_described_with_each_splits_name_and_index(serve: Serve) -> None:
    shared = plain_task()
    server = serve({"train": [rich_task(), shared], "test": [shared]})

    in_train = post(server, "/tasks/task", {"split": "train", "index": 1}).json()["task"]
    in_test = post(server, "/tasks/task", {"split": "test", "index": 0}).json()["task"]

    assert (in_train["id"], in_train["split"], in_train["index"]) == ("count-crates", "train", 1)
    assert (in_test["id"], in_test["split"], in_test["index"]) == ("count-crates", "test", 0)


def test_an_empty_split_lists_no_tasks_and_has_no_index_to_look_up(serve: Serve) -> None:
    server = serve({"train": [plain_task()], "holdout": []})

    listed = post(server, "/tasks/tasks", {"split": "holdout"})
    ranged = post(server, "/tasks/task_range", {"split": "holdout", "start": 0, "stop": 5})
    looked_up = post(server, "/tasks/task", {"split": "holdout", "index": 0})

    assert listed.json() == {"tasks": [], "env_name": "tasks"}
    assert ranged.json() == {"tasks": []}
    assert looked_up.status_code == 400
    assert looked_up.json()["detail"] == "index 0 is out of range for split 'holdout' (0 tasks: none)"


def test_an_unknown_split_of_hand_built_tasks_lists_each_split_with_its_count(serve: Serve) -> None:
    server = serve({"train": [plain_task(), rich_task()], "test": [plain_task()]})

    answer = post(server, "/tasks/tasks", {"split": "eval"})
    past_end = post(server, "/tasks/task", {"split": "test", "index": 1})

    assert answer.status_code == 404
    assert answer.json()["detail"] == "unknown split 'eval' (splits: train (2 tasks), test (1 task))"
    assert past_end.status_code == 400
    assert past_end.json()["detail"] == "index 1 is out of range for split 'test' (1 task: 0..0)"


def test_the_task_api_deploys_no_episode_of_any_hand_built_task(serve: Serve) -> None:
    tasks = [plain_task(), rich_task()]
    server = serve({"train": tasks})

    answers = [
        get(server, "/list_environments"),
        get(server, "/tasks/splits"),
        post(server, "/tasks/tasks", {"split": "train"}),
        post(server, "/tasks/num_tasks", {"split": "train"}),
        post(server, "/tasks/task", {"split": "train", "index": 0}),
        post(server, "/tasks/task", {"split": "train", "index": 1}),
        post(server, "/tasks/task_range", {"split": "train", "start": 0, "stop": 2}),
        get(server, "/schema"),
        get(server, "/metadata"),
    ]
    refused = post(server, "/tasks/task", {"split": "train", "index": 2})

    assert [answer.status_code for answer in answers] == [200] * 9 and refused.status_code == 400
    assert [task.episodes for task in tasks] == [[], []]
    assert get(server, "/tasks/status").json()["live_episodes"] == 0


def test_the_status_carries_a_fingerprint_of_every_task_spec_the_task_api_lists(serve: Serve) -> None:
    wharf = serve(build_app(WHARF))
    renamed = serve(build_app(WHARF, env_name="wharf-v2"))
    other = serve(build_served_app(fake_served({"train": [plain_task()]})))

    listed = {
        split["name"]: [
            TaskSpec.model_validate(t)
            for t in post(wharf, "/wharf/tasks", {"split": split["name"]}).json()["tasks"]
        ]
        for split in get(wharf, "/wharf/splits").json()
    }
    fingerprint = get(wharf, "/wharf/status").json()["tasks_fingerprint"]

    assert fingerprint == agent_env.tasks_fingerprint(
        listed, content=agent_env.load_bundle(WHARF).content_digest
    )
    assert get(renamed, "/wharf-v2/status").json()["tasks_fingerprint"] == fingerprint
    assert get(other, "/tasks/status").json()["tasks_fingerprint"] != fingerprint


SEEDED = a_task(files={"notes.txt": {"source": "files/notes.txt"}})
COPIES: dict[str, dict[str, Any]] = {
    "a verifier's expectation": {
        "tasks": {
            "train": [{**SEEDED, "verifiers": [{"type": "items", "env": "shelf", "expected": ["Emma"]}]}]
        }
    },
    "a seed file": {"files": {"files/notes.txt": "Emma is due back.\n"}},
    "the env's code": {
        "envs": {"shelf": SHELF.replace("self.books.append(title)", "self.books.append(title.upper())")}
    },
}


def shelf_copy(root: Path, **changed: Any) -> Path:
    """The shelf bundle with a seeded task, with `changed` (make_bundle's arguments) replaced."""
    base: dict[str, Any] = {"tasks": {"train": [SEEDED]}, "files": {"files/notes.txt": "Dune is due back.\n"}}
    return make_bundle(root, **{**base, **changed})


@pytest.mark.parametrize("what", list(COPIES))
def test_the_status_fingerprint_tells_bundle_copies_apart_by_what_decides_a_score_not_by_their_folder(
    serve: Serve, tmp_path: Path, what: str
) -> None:
    first, same, changed = (
        get(serve(build_app(root)), f"/{root.name}/status")
        for root in (
            shelf_copy(tmp_path / "first"),
            shelf_copy(tmp_path / "same"),
            shelf_copy(tmp_path / "changed", **COPIES[what]),
        )
    )

    assert [answer.status_code for answer in (first, same, changed)] == [200] * 3
    assert first.json()["tasks_fingerprint"] == same.json()["tasks_fingerprint"]
    assert first.json()["tasks_fingerprint"] != changed.json()["tasks_fingerprint"]

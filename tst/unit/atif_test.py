"""Recorded trajectories exported as ATIF-v1.7 (Harbor's Agent Trajectory Interchange Format), each
document checked against a JSON Schema written from the RFC (tst/support/atif) and the rules beside it.

Episodes are really played (the example bundle by its reference plays, fake tasks, a simulated user,
eval's player against a server on loopback), recorded as the server records them, then exported with
`to_atif`, `export_atif` or `agent-env export-atif`, as a user would.
"""

from __future__ import annotations

import asyncio
import copy
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agent_env import (
    Episode,
    EpisodeError,
    Trajectory,
    TrajectoryRecorder,
    export_atif,
    load_bundle,
    to_atif,
    trajectory_of,
)
from agent_env._atif import ATIF_VERSION, TRAJECTORY_FILE
from agent_env._replay import replay
from agent_env.cli import main
from agent_env.testing import FakeTask
from tst.support.atif import RFC_EXAMPLE, SCHEMA, atif_problems
from tst.support.bundles import a_task, make_bundle
from tst.support.tools import add_crate, jam_crane, list_crates
from tst.support.trajectories import played, write_folder
from tst.support.wharf import example, reference_play

pytestmark = pytest.mark.needs("dev_installed")  # jsonschema, which the locked dev install has

STORE_THEN_MOVE = "store-then-move-000"


def valid(document: dict[str, Any]) -> dict[str, Any]:
    """`document`, once it is shown to be valid ATIF-v1.7 of this exporter's version."""
    assert atif_problems(document) == []
    assert document["schema_version"] == ATIF_VERSION
    return document


def wharf_episode(task_id: str) -> Trajectory:
    """The example bundle's task played by its reference play, recorded as a server records it."""
    episode = Episode(example(task_id))
    asyncio.run(replay(episode, reference_play(task_id).turns))
    return trajectory_of(episode)


def shown(document: dict[str, Any]) -> list[tuple[str, Any]]:
    """Each step as a viewer lists it: its source, then its message or its calls with their results."""
    rows: list[tuple[str, Any]] = []
    for step in document["steps"]:
        if step.get("tool_calls"):
            results = {r["source_call_id"]: r.get("content") for r in step["observation"]["results"]}
            calls = [
                (c["function_name"], c["arguments"], results[c["tool_call_id"]]) for c in step["tool_calls"]
            ]
            rows.append((step["source"], calls))
        else:
            rows.append((step["source"], step["message"]))
    return rows


def test_the_schema_written_from_the_rfc_is_json_schema_and_takes_the_rfc_s_own_example() -> None:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(SCHEMA)

    assert atif_problems(RFC_EXAMPLE) == []


def _set(path: str, value: Any) -> Any:
    """A change to the RFC's example: `value` at `path` (slash-separated keys and indexes)."""

    def change(document: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        target: Any = document
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return change


CALL = {"tool_call_id": "call_1", "function_name": "financial_search", "arguments": {}}
FORBIDDEN = {  # each change to the RFC's example, and where the problem it makes is found
    "an unknown version": (_set("schema_version", "ATIF-v2.0"), "schema_version:"),
    "a field the RFC does not name": (_set("rating", 5), "(root): Additional properties"),
    "an agent without its version": (lambda d: d["agent"].pop("version"), "agent: 'version'"),
    "a step without its message": (lambda d: d["steps"][0].pop("message"), "steps/0: 'message'"),
    "a model named on a user's step": (_set("steps/0/model_name", "gemini-2.5-flash"), "steps/0/model_name:"),
    "tool calls on a user's step": (_set("steps/0/tool_calls", [CALL]), "steps/0/tool_calls:"),
    "a step out of sequence": (_set("steps/2/step_id", 4), "steps/2/step_id: 4, not 3"),
    "a result naming a call of another step": (
        _set("steps/1/observation/results/0/source_call_id", "call_x"),
        "steps/1/observation/results/0: source_call_id 'call_x'",
    ),
    "a call id twice in a step": (
        _set("steps/1/tool_calls/1/tool_call_id", "call_price_1"),
        "steps/1/tool_calls:",
    ),
    "arguments that are not an object": (
        _set("steps/1/tool_calls/0/arguments", "GOOGL"),
        "steps/1/tool_calls/0",
    ),
    "a dispatch without a model that has metrics": (_set("steps/2/llm_call_count", 0), "steps/2/metrics:"),
    "a subagent reference by session id alone": (
        _set("steps/1/observation/results/0/subagent_trajectory_ref", [{"session_id": "sub-1"}]),
        "steps/1/observation",
    ),
    "an image part without its source": (_set("steps/0/message", [{"type": "image"}]), "steps/0/message:"),
    "a timestamp that is not ISO 8601": (_set("steps/0/timestamp", "Oct 11, 2025"), "steps/0/timestamp:"),
}


@pytest.mark.parametrize(("change", "where"), FORBIDDEN.values(), ids=FORBIDDEN.keys())
def test_the_schema_and_its_rules_refuse_each_thing_the_rfc_forbids_where_it_is(
    change: Any, where: str
) -> None:
    document = copy.deepcopy(RFC_EXAMPLE)
    change(document)

    problems = atif_problems(document)

    assert any(problem.startswith(where) for problem in problems), problems


def test_a_wharf_episode_exports_each_turn_s_prompt_calls_with_their_results_and_reply_then_its_score() -> (
    None
):
    trajectory = wharf_episode(STORE_THEN_MOVE)

    document = valid(to_atif(trajectory))

    first, second = trajectory.turns
    calls = [(c.tool, c.arguments, c.result) for c in first.calls]
    moves = [(c.tool, c.arguments, c.result) for c in second.calls]
    assert shown(document) == [
        ("system", trajectory.system_prompt),
        ("user", first.prompt),
        *[("agent", [call]) for call in calls],  # a server sees calls one at a time: a step each
        ("agent", first.reply),
        ("user", second.prompt),
        *[("agent", [call]) for call in moves],
        ("agent", second.reply),
        ("system", "The episode was scored: 1."),
    ]
    assert calls and moves and all(result for *_, result in calls + moves)
    assert document["session_id"] == document["trajectory_id"] == trajectory.id
    assert document["agent"]["name"] == "agent-env" and "model_name" not in document["agent"]
    assert document["steps"][0]["timestamp"].endswith("Z")
    assert document["final_metrics"]["total_steps"] == len(document["steps"])
    extra = document["extra"]
    assert (extra["score"], extra["outcome"]["kind"], extra["task"]["id"]) == (1.0, "scored", STORE_THEN_MOVE)
    verifiers = document["steps"][-1]["observation"]["results"]
    assert [r["extra"]["type"] for r in verifiers] == [v.type for v in trajectory.verifiers]
    assert all(r["content"].startswith(f"{r['extra']['type']}: 1 (weight ") for r in verifiers)


def test_a_failed_call_is_the_error_the_agent_saw_with_its_code_beside_the_calls_that_succeeded() -> None:
    task = FakeTask("jammed", tools=[add_crate, jam_crane], system_prompt="You run the dock.")
    trajectory = played(
        task,
        ("call", "jam_crane", {"crate": "C4"}),
        ("call", "add_crate", {"crate": "C4", "bay": "nine"}),
        ("call", "lift_crate", {"crate": "C4"}),
        ("call", "add_crate", {"crate": "C4", "bay": 3}),
        ("end", "Stored C4 after the crane jammed."),
    )

    document = valid(to_atif(trajectory))

    system, _, *agent_steps, _, _ = document["steps"]
    assert (system["source"], system["message"]) == ("system", "You run the dock.")
    results = [step["observation"]["results"][0] for step in agent_steps]
    assert [r.get("extra", {}).get("error_code") for r in results] == [
        "TOOL_ERROR",
        "INVALID_ARGUMENTS",
        "UNKNOWN_TOOL",
        None,
    ]
    recorded = trajectory.turns[0].calls
    assert [r["content"] for r in results[:3]] == [f"error: {call.error}" for call in recorded[:3]]
    assert "the crane is jammed with C4" in results[0]["content"]
    assert results[3]["content"] == "stored dry crate C4 in bay 3"
    assert document["final_metrics"]["extra"] == {"tool_calls": 4, "tool_failures": 3}


def test_an_episode_whose_verifier_cannot_score_it_says_why_in_its_last_step_and_has_no_score() -> None:
    def unscorable(context: object) -> float:
        raise RuntimeError("reward.json names no numeric reward")

    task = FakeTask("unscorable", tools=[add_crate], score=unscorable)
    episode = task.new_episode()

    async def play() -> None:
        await episode.deploy()
        with pytest.raises(EpisodeError):
            await episode.end_turn("Done.")
        await episode.teardown()

    asyncio.run(play())
    trajectory = trajectory_of(episode)

    document = valid(to_atif(trajectory))

    last = document["steps"][-1]
    assert last["source"] == "system" and last["extra"] == {"outcome": "failed"}
    assert last["message"].startswith("The episode failed (VERIFIER_FAILED): ")
    assert "reward.json names no numeric reward" in last["message"]
    assert "observation" not in last
    assert document["extra"]["score"] is None
    assert document["extra"]["outcome"]["code"] == "VERIFIER_FAILED"


def test_an_episode_abandoned_mid_turn_exports_its_open_turn_without_a_reply() -> None:
    trajectory = played(FakeTask("left", tools=[list_crates]), ("call", "list_crates", {}))

    document = valid(to_atif(trajectory))

    assert shown(document) == [
        ("user", "Do the task."),
        ("agent", [("list_crates", {}, "C1 in bay 2")]),
        ("system", "The episode was abandoned before it was scored."),
    ]


SHELF_USER = """
    def reader(context, title):
        if title in context.envs["shelf"].books:
            return None
        return f"{title}, please." if "which" in context.reply.lower() else f"Not shelved yet: {title}."
"""


def test_a_simulated_user_s_turns_are_user_steps_that_say_who_wrote_them(tmp_path: Path) -> None:
    user = {"function": "reader", "args": {"title": "Dune"}, "max_turns": 4}
    root = make_bundle(
        tmp_path,
        tasks={"train": [a_task(turns=["I would like a book shelved."], user=user)]},
        files={"users.py": textwrap.dedent(SHELF_USER)},
    )
    episode = Episode(load_bundle(root).task("train", 0))

    async def play() -> None:
        await episode.deploy()
        await episode.end_turn("Which book would you like?")
        await episode.call_tool("put_book", {"title": "Dune"})
        await episode.end_turn("Dune is on the shelf.")
        await episode.teardown()

    asyncio.run(play())

    trajectory = trajectory_of(episode)
    document = valid(to_atif(trajectory))

    users = [(s["message"], s["extra"]) for s in document["steps"] if s["source"] == "user"]
    assert users == [
        ("I would like a book shelved.", {"turn": 1, "prompt_by": "task"}),
        ("Dune, please.", {"turn": 2, "prompt_by": "simulated user"}),
    ]
    shelved = trajectory.turns[1].calls[0].result
    assert shown(document)[1:] == [
        ("user", "I would like a book shelved."),
        ("agent", "Which book would you like?"),
        ("user", "Dune, please."),
        ("agent", [("put_book", {"title": "Dune"}, shelved)]),
        ("agent", "Dune is on the shelf."),
        ("system", "The episode was scored: 1."),
    ]


@pytest.mark.needs("eval_installed")
def test_an_eval_trajectory_s_calls_made_together_are_one_agent_step_and_its_model_is_named(
    serve: Any,
) -> None:
    from agent_env import Solution
    from agent_env.eval import ScriptedPolicy, play_sample

    task = FakeTask("store", tools=[add_crate, list_crates])
    solution = Solution.model_validate(
        {
            "id": "store",
            "turns": [
                {
                    "calls": [
                        {"tool": "list_crates"},
                        [
                            {"tool": "add_crate", "arguments": {"crate": "C2", "bay": 3}},
                            {"tool": "add_crate", "arguments": {"crate": "C3", "bay": "four"}},
                        ],
                    ],
                    "reply": "Stored C2; C3 was refused.",
                }
            ],
        }
    )
    url = serve({"train": [task]}).url

    trajectory = play_sample(url, task.spec("train", 0), ScriptedPolicy(solution), model="stand-in-7b")

    document = valid(to_atif(trajectory))
    assert document["agent"]["model_name"] == "stand-in-7b"
    assert document["agent"]["extra"] == {"recorded_by": "eval"}
    steps = document["steps"]
    assert [len(s.get("tool_calls", [])) for s in steps if s["source"] == "agent"] == [1, 2, 0]
    together = steps[2]
    assert [r["source_call_id"] for r in together["observation"]["results"]] == [
        c["tool_call_id"] for c in together["tool_calls"]
    ]
    assert [r["extra"].get("error_code") for r in together["observation"]["results"]] == [
        None,
        "INVALID_ARGUMENTS",
    ]
    assert [r["extra"]["step"] for r in together["observation"]["results"]] == [2, 2]
    assert steps[3]["message"] == "Stored C2; C3 was refused." and steps[3]["extra"]["end_turn"] is True


@pytest.mark.needs("openenv_installed")
def test_openenv_reads_an_exported_episode_as_a_harbor_trial_s_agent_trajectory(tmp_path: Path) -> None:
    from openenv.harbor.atif import agent_steps, load_atif

    trajectory = wharf_episode(STORE_THEN_MOVE)
    write_folder(tmp_path / "runs", [trajectory])

    (path,) = export_atif(tmp_path / "runs", tmp_path / "atif").written

    trial = tmp_path / "atif" / trajectory.id
    assert path == trial / TRAJECTORY_FILE
    read = load_atif(trial)
    assert read == to_atif(trajectory)
    calls = sum(len(turn.calls) for turn in trajectory.turns)
    assert len(agent_steps(read)) == calls + len(trajectory.turns)


def _harbor_line() -> str:
    """A trajectory as a Harbor task's episode records it: its test script's named rewards and last
    lines, and its score."""
    return json.dumps(
        {
            "id": "harbor-run-1",
            "recorded_by": "server",
            "task": {"split": "train", "index": 0, "id": "fix-the-build", "toolset": "default"},
            "turns": [{"turn": 1, "prompt": "Fix the build.", "calls": [], "reply": "Fixed."}],
            "verifiers": [
                {
                    "type": "test_script",
                    "weight": 1.0,
                    "score": 0.5,
                    "components": {"compiles": 1.0, "tests": 0.0},
                    "detail": "FAILED test_outputs.py::test_build\n1 failed, 1 passed in 0.12s",
                }
            ],
            "score": 0.5,
            "outcome": {"kind": "scored"},
        }
    )


def test_export_atif_writes_a_document_per_recorded_episode_and_one_summary_line_naming_what_it_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    recorder = TrajectoryRecorder(runs)
    episodes = [
        wharf_episode(STORE_THEN_MOVE),
        played(FakeTask("store", tools=[add_crate]), ("end", "Done.")),
    ]
    for trajectory in episodes:
        recorder.record(trajectory)
    recorder.close()
    with (runs / "harbor.jsonl").open("w") as file:
        file.write(_harbor_line() + "\n{not a trajectory\n")

    code = main(["export-atif", str(runs), "--out", str(tmp_path / "atif")])

    out, err = capsys.readouterr()
    assert code == 0
    assert out == (
        f"agent-env export-atif: 3 episodes written to {tmp_path / 'atif'} as ATIF-v1.7 "
        "({id}/agent/trajectory.json), 1 line skipped\n"
    )
    assert f"skipped {runs / 'harbor.jsonl'}:2: " in err
    ids = [trajectory.id for trajectory in episodes] + ["harbor-run-1"]
    documents = {
        i: valid(
            json.loads((tmp_path / "atif" / i / "agent" / "trajectory.json").read_text(encoding="utf-8"))
        )
        for i in ids
    }
    assert documents[episodes[0].id] == to_atif(episodes[0])
    (verifier,) = documents["harbor-run-1"]["steps"][-1]["observation"]["results"]
    assert verifier["content"] == (
        "test_script: 0.5 (weight 1); compiles 1, tests 0\n"
        "FAILED test_outputs.py::test_build\n1 failed, 1 passed in 0.12s"
    )
    assert verifier["extra"]["components"] == {"compiles": 1.0, "tests": 0.0}
    assert verifier["extra"]["detail"].endswith("1 failed, 1 passed in 0.12s")


def test_episode_ids_that_are_not_safe_folder_names_or_that_repeat_get_folders_of_their_own(
    tmp_path: Path,
) -> None:
    line = json.loads(_harbor_line())
    lines = [line | {"id": "../outside"}, line, line | {"id": ""}, line]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(item) + "\n" for item in lines))

    written = export_atif(tmp_path / "runs.jsonl", tmp_path / "atif").written

    names = [path.relative_to(tmp_path / "atif").parts[0] for path in written]
    assert names[1::2] == ["harbor-run-1", "harbor-run-1-2"]
    assert names[0].startswith("episode-") and names[2].startswith("episode-") and names[0] != names[2]
    assert all(path.is_relative_to(tmp_path / "atif") for path in written)
    assert [json.loads(path.read_text())["session_id"] for path in written] == [item["id"] for item in lines]


def test_export_atif_refuses_a_source_that_is_not_there_and_an_out_that_is_a_file_in_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    write_folder(tmp_path / "runs", [played(FakeTask("store", tools=[add_crate]), ("end", "Done."))])

    missing = main(["export-atif", str(tmp_path / "nowhere"), "--out", str(tmp_path / "atif")])
    missing_err = capsys.readouterr().err
    onto_a_file = main(["export-atif", str(tmp_path / "runs"), "--out", str(tmp_path / "file")])
    file_err = capsys.readouterr().err

    assert (missing, onto_a_file) == (2, 2)
    assert missing_err == (
        f"error: there is no file or folder at {tmp_path / 'nowhere'}: pass a folder of trajectories "
        "(agent-env serve --record, agent-env eval --out) or one of their .jsonl files\n"
    )
    refusal = "is a file: pass a folder (made if missing) to write the documents in"
    assert file_err == f"error: {tmp_path / 'file'} {refusal}\n"
    assert not (tmp_path / "atif").exists()


def test_export_atif_of_a_folder_without_a_trajectory_exits_1_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "notes.jsonl").write_text('{"hello": "world"}\n')

    code = main(["export-atif", str(tmp_path / "runs"), "--out", str(tmp_path / "atif")])

    assert code == 1
    assert capsys.readouterr().err.endswith(
        f"agent-env export-atif: no trajectory in {tmp_path / 'runs'}, 1 line skipped\n"
    )

import asyncio
import json
from pathlib import Path

import pytest

from agent_env import BundleError, Episode, load_bundle
from tst.support.bundles import SHELF, TOML, a_task, files_read, make_bundle

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "wharf"

BOX = '''
from agent_env import Env, tool


class Box(Env):
    """A box of things, with no items() of its own."""

    @tool
    def open_box(self) -> str:
        """Open the box."""
        return "open"
'''


def problems_of(root: Path) -> list[str]:
    with pytest.raises(BundleError) as caught:
        load_bundle(root)
    return [str(p) for p in caught.value.problems]


def test_the_example_bundle_loads_with_its_envs_agents_and_both_splits():
    bundle = load_bundle(EXAMPLE)

    assert bundle.name == "wharf"
    assert set(bundle.envs) == {"dock", "pantry"}
    assert set(bundle.agents) == {"deckhand", "harbormaster", "cook", "quartermaster", "clerk"}
    assert set(bundle.splits) == {"train", "eval"}
    assert len(bundle.tasks("train")) >= 30
    assert [t.index for t in bundle.tasks("train")] == list(range(len(bundle.tasks("train"))))


def test_a_task_spec_carries_its_prompt_as_chat_messages_and_its_toolset(tmp_path):
    bundle = load_bundle(make_bundle(tmp_path / "b", tasks={"train": [a_task(turns=["One.", "Two."])]}))

    spec = bundle.task("train", 0).spec

    assert spec.id == "t1" and spec.split == "train" and spec.index == 0 and spec.turns == 2
    assert spec.prompt == [
        {"role": "system", "content": "You keep the shelf."},
        {"role": "user", "content": "One."},
    ]
    assert spec.toolset.model_dump() == {
        "name": "shelf",
        "envs": ("shelf",),
        "role": "default",
        "access": (),
        "bash": False,
        "tools": tuple(bundle.task("train", 0).toolset.tools),
        "tool_timeouts": {},
    }


def test_a_bundle_loads_a_split_kept_as_a_json_list(tmp_path):
    root = make_bundle(tmp_path / "b", tasks={})
    (root / "tasks" / "eval.json").write_text(json.dumps([a_task(id="e1"), a_task(id="e2")]))

    assert [t.id for t in load_bundle(root).tasks("eval")] == ["e1", "e2"]


def test_an_unknown_split_or_an_index_out_of_range_is_an_error_naming_what_exists():
    bundle = load_bundle(EXAMPLE)

    with pytest.raises(KeyError, match=r"unknown split 'dev'.*splits: .*train"):
        bundle.tasks("dev")
    with pytest.raises(IndexError, match="index 999 is out of range"):
        bundle.task("train", 999)


def test_a_folder_without_bundle_toml_is_refused_with_what_a_bundle_is(tmp_path):
    (problem,) = problems_of(tmp_path)

    assert "has no bundle.toml" in problem and "envs/" in problem and "tasks/" in problem


def test_malformed_toml_is_reported_with_its_line(tmp_path):
    (problem, *_) = problems_of(make_bundle(tmp_path / "b", toml="[agents.reader\nenvs = 1\n"))

    assert problem.startswith("bundle.toml: malformed TOML") and "line 1" in problem


def test_an_unknown_field_in_bundle_toml_is_named_so_a_typo_is_not_a_silent_default(tmp_path):
    toml = TOML + 'sytem_prompt = "x"\n'

    problems = problems_of(make_bundle(tmp_path / "b", toml=toml))

    assert problems == [
        "bundle.toml: field 'agents.reader.sytem_prompt' is unknown; remove it or check its spelling"
    ]


def test_an_agent_naming_an_unknown_env_gets_a_suggestion(tmp_path):
    problems = problems_of(make_bundle(tmp_path / "b", toml=TOML.replace('["shelf"]', '["shelff"]')))

    assert any("agents.reader" in p and "env 'shelff'" in p and "did you mean 'shelf'" in p for p in problems)


def test_a_task_naming_an_unknown_agent_is_reported_with_its_file_and_line(tmp_path):
    tasks = {"train": [a_task(), a_task(id="t2", agent="reeder")]}

    problems = problems_of(make_bundle(tmp_path / "b", tasks=tasks))

    assert problems == [
        "tasks/train.jsonl:2 (task 't2'): agent 'reeder' is not defined; did you mean 'reader'?"
    ]


def test_a_duplicate_task_id_is_reported_with_where_it_first_appeared(tmp_path):
    problems = problems_of(make_bundle(tmp_path / "b", tasks={"train": [a_task()], "eval": [a_task()]}))

    assert len(problems) == 1
    assert "duplicate task id 't1'" in problems[0] and "tasks/eval.jsonl:1" in problems[0]


def test_an_empty_split_is_reported(tmp_path):
    problems = problems_of(make_bundle(tmp_path / "b", tasks={"train": [a_task()], "eval": "\n"}))

    assert problems == ["tasks/eval.jsonl: split 'eval' has no tasks; add one per line or delete the file"]


def test_a_bundle_without_tasks_is_told_how_to_add_them(tmp_path):
    problems = problems_of(make_bundle(tmp_path / "b", tasks={}))

    assert problems == ["tasks/: no task files; add tasks/train.jsonl with one task (a JSON object) per line"]


def test_malformed_json_is_reported_with_its_line_and_the_other_lines_still_load_and_are_checked(tmp_path):
    text = json.dumps(a_task()) + "\n{not json\n" + json.dumps(a_task(id="t3", agent="nobody")) + "\n"

    problems = problems_of(make_bundle(tmp_path / "b", tasks={"train": text}))

    assert problems[0].startswith("tasks/train.jsonl:2: malformed JSON")
    assert problems[1].startswith("tasks/train.jsonl:3 (task 't3'): agent 'nobody'")


def test_a_task_field_of_the_wrong_shape_is_named_by_its_path(tmp_path):
    tasks = {"train": [a_task(turns=[]), a_task(id="t2", verifiers=[{"type": "items", "env": "shelf"}])]}

    problems = problems_of(make_bundle(tmp_path / "b", tasks=tasks))

    assert any(p.startswith("tasks/train.jsonl:1 (task 't1'): field 'turns':") for p in problems)
    assert "tasks/train.jsonl:2 (task 't2'): field 'verifiers.0.expected' is required" in problems


def test_an_unknown_verifier_type_names_the_types_there_are(tmp_path):
    tasks = {"train": [a_task(verifiers=[{"type": "vibes"}])]}

    (problem,) = problems_of(make_bundle(tmp_path / "b", tasks=tasks))

    assert "verifiers.0" in problem and "'items', 'bash', 'reply', 'function'" in problem


def test_a_verifier_naming_an_unknown_env_gets_a_suggestion(tmp_path):
    tasks = {"train": [a_task(verifiers=[{"type": "items", "env": "shelv", "expected": []}])]}

    (problem,) = problems_of(make_bundle(tmp_path / "b", tasks=tasks))

    assert "verifiers[0]: verifier 'items' names env 'shelv'; did you mean 'shelf'?" in problem


def test_an_items_verifier_on_an_env_without_items_is_refused(tmp_path):
    toml = TOML.replace('["shelf"]', '["shelf", "box"]')
    tasks = {"train": [a_task(verifiers=[{"type": "items", "env": "box", "expected": []}])]}

    (problem,) = problems_of(
        make_bundle(tmp_path / "b", toml=toml, envs={"shelf": SHELF, "box": BOX}, tasks=tasks)
    )

    assert "env 'box' does not define items()" in problem


def test_a_function_verifier_must_name_a_function_of_verifiers_py(tmp_path):
    tasks = {"train": [a_task(verifiers=[{"type": "function", "function": "has_dun"}])]}
    verifiers = "def has_dune(context):\n    return 'Dune' in context.envs['shelf'].items()\n"

    (problem,) = problems_of(make_bundle(tmp_path / "b", tasks=tasks, verifiers=verifiers))

    assert "verifier function 'has_dun' is not defined in verifiers.py; did you mean 'has_dune'?" in problem


def test_a_function_verifier_that_cannot_take_its_task_s_args_is_refused_at_load_naming_the_signature(
    tmp_path,
):
    verifiers = "def has(context, title):\n    return title in context.envs['shelf'].items()\n"
    tasks = {
        "train": [
            a_task(id="t1", verifiers=[{"type": "function", "function": "has", "args": {"title": "Dune"}}]),
            a_task(id="t2", verifiers=[{"type": "function", "function": "has", "args": {"titel": "Dune"}}]),
        ]
    }

    problems = problems_of(make_bundle(tmp_path / "b", tasks=tasks, verifiers=verifiers))

    assert problems == [
        "tasks/train.jsonl:2 (task 't2'): verifiers[0]: verifier function 'has' cannot take the task's args "
        "{'titel': 'Dune'}: missing a required argument: 'title'; it is called as has(context, **args), so "
        "write `def has(context, titel)`"
    ]


def test_seed_data_for_an_env_the_agent_does_not_use_is_refused(tmp_path):
    tasks = {"train": [a_task(seed={"pantry": {}})]}

    (problem,) = problems_of(make_bundle(tmp_path / "b", tasks=tasks))

    assert "seed names env 'pantry', which agent 'reader' does not use" in problem


def test_access_changes_naming_an_unknown_tool_or_role_are_refused(tmp_path):
    change = {"action": "disable", "role": "librarian", "tools": ["put_bok"]}
    tasks = {"train": [a_task(modify_env_tool_access=[change])]}

    problems = problems_of(make_bundle(tmp_path / "b", tasks=tasks))

    assert any("role 'librarian' is not used by any agent or tool" in p for p in problems)
    assert any("tool 'put_bok' is not a tool of shelf; did you mean 'put_book'?" in p for p in problems)


def test_tools_whose_schema_cannot_be_built_are_refused_with_their_file_line_and_the_fix(tmp_path):
    env = (
        SHELF
        + '''
    @tool
    def reset(self, n) -> str:
        """Start over."""
        return "ok"
'''
    )
    problems = problems_of(make_bundle(tmp_path / "b", envs={"shelf": env}))

    assert any(p.startswith("envs/shelf.py:") and "tool 'reset': the name is reserved" in p for p in problems)
    assert any("tool 'reset': argument 'n' has no type hint; annotate it" in p for p in problems)


SLOW_SHELF = (
    SHELF
    + '''
    @tool(timeout_s=TIMEOUT)
    def dust(self) -> str:
        """Dust the shelf, slowly."""
        return "dusted"
'''
)


def test_a_tool_s_own_deadline_is_listed_in_its_task_s_spec(tmp_path):
    env = SLOW_SHELF.replace("TIMEOUT", "90")

    spec = load_bundle(make_bundle(tmp_path / "b", envs={"shelf": env})).task("train", 0).spec

    assert spec.toolset.tool_timeouts == {"dust": 90.0}
    assert [tool["function"]["name"] for tool in spec.toolset.tools or ()] == ["put_book", "dust"]


def test_a_tool_deadline_that_is_not_a_positive_number_is_refused_at_load_with_its_line_and_the_fix(tmp_path):
    env = SLOW_SHELF.replace("TIMEOUT", "'1 min'")

    problems = problems_of(make_bundle(tmp_path / "b", envs={"shelf": env}))

    line = env.splitlines().index("    @tool(timeout_s='1 min')") + 1
    assert problems == [
        f"envs/shelf.py:{line}: failed to import: ToolDefinitionError: tool 'dust': timeout_s must be a "
        "number of seconds > 0, got '1 min'; declare the tool's deadline as @tool(timeout_s=30), or leave "
        "timeout_s out for none of its own"
    ]


def test_a_tool_named_as_a_python_keyword_is_refused_at_load(tmp_path):
    env = (
        SHELF
        + '''
def _class(self) -> str:
    """Tell the shelf's class."""
    return "fiction"


_class.__name__ = "class"
setattr(Shelf, "class", tool(_class))
'''
    )
    problems = problems_of(make_bundle(tmp_path / "b", envs={"shelf": env}))

    assert any(
        "envs/shelf.py" in p
        and "tool 'class': the name is a Python keyword, which no trainer can call; rename it" in p
        for p in problems
    )


def test_an_env_module_that_fails_to_import_is_reported_with_its_line(tmp_path):
    env = "from agent_env import Env\n\nraise RuntimeError('no shelf today')\n"

    problems = problems_of(make_bundle(tmp_path / "b", envs={"shelf": env}))

    assert problems == ["envs/shelf.py:3: failed to import: RuntimeError: no shelf today"]


def test_an_env_module_must_define_exactly_one_env(tmp_path):
    two = SHELF + "\n\nclass Shelf2(Shelf):\n    pass\n"

    problems = problems_of(make_bundle(tmp_path / "b", envs={"shelf": two}))

    assert problems == [
        "envs/shelf.py: defines 2 Env subclasses (Shelf, Shelf2); define exactly one per module"
    ]


def test_two_envs_of_one_agent_may_not_define_the_same_tool(tmp_path):
    toml = TOML.replace('["shelf"]', '["shelf", "shelf2"]')

    problems = problems_of(make_bundle(tmp_path / "b", toml=toml, envs={"shelf": SHELF, "shelf2": SHELF}))

    assert any("envs 'shelf' and 'shelf2' both define tool 'put_book'" in p for p in problems)


def test_sandbox_files_must_stay_inside_the_sandbox_and_sources_inside_the_bundle(tmp_path):
    (tmp_path / "secret.txt").write_text("outside")
    files = {"../x": "a", "/etc/x": "b", "ok.txt": {"source": "../secret.txt"}}
    tasks = {"train": [a_task(files=files)]}

    problems = problems_of(make_bundle(tmp_path / "b", tasks=tasks))

    assert sum("must be relative and stay inside the sandbox" in p for p in problems) == 2
    assert any("files['ok.txt']" in p and "leads out of the bundle" in p for p in problems)


def test_a_symlink_out_of_the_bundle_is_refused_and_not_read(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("raise SystemExit('read from outside')\n")
    root = make_bundle(tmp_path / "b")
    (root / "envs" / "evil.py").symlink_to(outside)

    problems = problems_of(root)

    assert problems == [
        f"envs/evil.py: leads out of the bundle (a symlink or '..'), to '{outside}': put the file itself "
        "in the bundle (a link to a file inside it is fine); nothing out of it is read"
    ]


@pytest.mark.parametrize(
    ("linked", "named", "where"),
    [
        ("bundle.toml", "", "bundle.toml"),
        ("envs/notes.toml", "", "envs/notes.toml"),
        ("tasks/train.jsonl", "", "tasks/train.jsonl"),
        ("tasks", "train.jsonl", "tasks/train.jsonl"),
        ("solutions/train.jsonl", "", "solutions/train.jsonl"),
        ("files/in.csv", "", "tasks/train.jsonl:1 (task 't1'): files['in.csv']"),
    ],
)
@pytest.mark.needs("mcp_installed")  # the bundle has an MCP env, for its envs/NAME.toml
def test_every_file_a_bundle_is_read_from_that_links_out_of_it_is_refused_unread_naming_it_and_the_fix(
    tmp_path, monkeypatch, linked, named, where
):
    solution = {"id": "t1", "turns": [{"calls": [{"tool": "put_book", "arguments": {"title": "Dune"}}]}]}
    root = make_bundle(
        tmp_path / "b",
        tasks={"train": [a_task(files={"in.csv": {"source": "files/in.csv"}})]},
        files={
            "files/in.csv": "a,b\n",
            "envs/notes.toml": 'command = "python3"\n',
            "solutions/train.jsonl": json.dumps(solution) + "\n",
        },
    )
    load_bundle(root)  # as it is, it loads
    link = root / linked
    outside = tmp_path / "elsewhere" / link.name
    outside.parent.mkdir()
    link.rename(outside)  # the very bytes the bundle had: read, they would load
    link.symlink_to(outside)
    read = files_read(monkeypatch)

    problems = problems_of(root)

    target = outside / named if named else outside
    assert problems == [
        f"{where}: leads out of the bundle (a symlink or '..'), to '{target}': put the file itself in the "
        "bundle (a link to a file inside it is fine); nothing out of it is read"
    ]
    assert not [path for path in read if path.is_relative_to(outside.parent)]


def test_a_link_to_a_file_inside_the_bundle_is_read_as_that_file(tmp_path):
    root = make_bundle(tmp_path / "b", files={"data/train.jsonl": json.dumps(a_task(id="linked")) + "\n"})
    (root / "tasks" / "train.jsonl").unlink()
    (root / "tasks" / "train.jsonl").symlink_to("../data/train.jsonl")

    assert [task.id for task in load_bundle(root).tasks("train")] == ["linked"]


def test_a_prompt_over_1_mib_is_refused_naming_the_task_the_turn_and_the_cap(tmp_path):
    long = "Shelve Dune. " + "x" * 2**20
    root = make_bundle(
        tmp_path / "b",
        toml=TOML.replace('"You keep the shelf."', f'"{long}"'),
        tasks={"train": [a_task(turns=["Shelve Dune.", long])]},
    )

    problems = problems_of(root)

    why = (
        "is 1.01 MiB, over the 1 MiB a prompt may be: shorten it (a model's context holds far less), and "
        "give the task the data it needs as files instead (a bundle's sandbox files, a Harbor task's "
        "environment/)"
    )
    assert problems == [
        f"bundle.toml: agents.reader.system_prompt: {why}",
        f"tasks/train.jsonl:1 (task 't1'): turns[1]: {why}",
    ]


def test_a_huge_task_file_or_sandbox_source_is_refused_unread_naming_its_size(tmp_path, monkeypatch):
    root = make_bundle(
        tmp_path / "b", tasks={"train": [a_task(files={"data.bin": {"source": "data/big.bin"}})]}
    )
    (root / "data").mkdir()
    huge = 300 * 2**20  # sparse: nothing is written, and the check must not read them
    with (root / "data" / "big.bin").open("wb") as big:
        big.truncate(huge)
    with (root / "tasks" / "eval.jsonl").open("wb") as eval_tasks:
        eval_tasks.truncate(huge)
    read = []
    original = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self.name) or original(self))

    problems = problems_of(root)

    assert [p.split(": '", 1)[0] for p in problems] == [
        "tasks/eval.jsonl",
        "tasks/train.jsonl:1 (task 't1'): files['data.bin']",
    ]
    assert all("is 300 MiB, over the 256 MiB a bundle's file may be" in p for p in problems)
    assert "big.bin" not in read and "eval.jsonl" not in read


def test_a_sandbox_file_may_be_copied_from_the_bundle(tmp_path):
    root = make_bundle(
        tmp_path / "b",
        tasks={"train": [a_task(files={"data/in.csv": {"source": "files/in.csv"}})]},
        files={"files/in.csv": "a,b\n"},
    )

    assert load_bundle(root).task("train", 0).files == {"data/in.csv": b"a,b\n"}


def test_every_problem_of_a_bundle_is_reported_at_once(tmp_path):
    toml = TOML + '\n[agents.scribe]\nenvs = ["pantri"]\n'
    tasks = {"train": [a_task(agent="deckhand2"), a_task(id="t2", seed={"nope": {}}), "{bad"]}
    tasks["train"] = "".join(
        json.dumps(t) + "\n" if isinstance(t, dict) else t + "\n" for t in tasks["train"]
    )

    with pytest.raises(BundleError) as caught:
        load_bundle(make_bundle(tmp_path / "b", toml=toml, tasks=tasks))

    assert len(caught.value.problems) == 4
    assert str(caught.value).startswith(f"4 problems in {tmp_path / 'b'}\n  ")
    assert caught.value.code == "BUNDLE_INVALID"


def solutions_file(*lines: object) -> dict[str, str]:
    """A bundle's solutions/train.jsonl of `lines` (a string is written as it is, anything else as JSON)."""
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    return {"solutions/train.jsonl": text}


SHELVE_DUNE = {"id": "t1", "turns": [{"calls": [{"tool": "put_book", "arguments": {"title": "Dune"}}]}]}


def test_the_example_bundle_holds_a_checked_reference_play_of_every_task_by_split_and_id():
    bundle = load_bundle(EXAMPLE)

    assert {split: list(plays) for split, plays in bundle.solutions.items()} == {
        split: [task.id for task in tasks] for split, tasks in bundle.splits.items()
    }


def test_a_solutions_line_of_malformed_json_is_reported_with_its_line_and_the_others_still_checked(tmp_path):
    files = solutions_file(SHELVE_DUNE, "{not json", {**SHELVE_DUNE, "id": "t9"})

    problems = problems_of(make_bundle(tmp_path / "b", files=files))

    assert problems[0].startswith("solutions/train.jsonl:2: malformed JSON")
    assert problems[1] == (
        "solutions/train.jsonl:3: task 't9' is not a task of split 'train' (choices: t1): "
        "a solution names a task of tasks/train.jsonl by its id"
    )


def test_a_solution_with_more_or_fewer_turns_than_its_task_is_reported_saying_one_entry_per_turn(tmp_path):
    two_turns = {**SHELVE_DUNE, "turns": SHELVE_DUNE["turns"] * 2}

    problems = problems_of(make_bundle(tmp_path / "b", files=solutions_file(two_turns)))

    assert problems == [
        "solutions/train.jsonl:1 (task 't1'): the solution plays 2 turns and the task has 1 turn: "
        'write one {"calls": [...], "reply": ...} per turn of the task'
    ]


def test_a_solution_calling_a_tool_its_task_does_not_offer_is_reported_at_load_with_the_nearest_name(
    tmp_path,
):
    misspelt = {"id": "t1", "turns": [{"calls": [{"tool": "put_bok", "arguments": {"title": "Dune"}}]}]}

    problems = problems_of(make_bundle(tmp_path / "b", files=solutions_file(misspelt)))

    assert len(problems) == 1
    assert problems[0].startswith(
        "solutions/train.jsonl:1 (task 't1'): turn 1 calls tool 'put_bok', which the task does not offer; "
        "did you mean 'put_book'? (tools: put_book"
    )


def test_a_solution_of_the_wrong_shape_is_named_by_its_field(tmp_path):
    misspelt = {"id": "t1", "turns": [{"calls": [{"tool": "put_book", "args": {"title": "Dune"}}]}]}

    problems = problems_of(make_bundle(tmp_path / "b", files=solutions_file(misspelt)))

    assert problems == [
        "solutions/train.jsonl:1 (task 't1'): field 'turns.0.calls.0.args' is unknown; remove it or "
        "check its spelling"
    ]


def test_a_solutions_step_of_the_wrong_shape_is_reported_at_load_saying_how_to_write_steps(tmp_path):
    empty_step = {
        "id": "t1",
        "turns": [{"calls": [{"tool": "put_book", "arguments": {"title": "Dune"}}, []]}],
    }

    problems = problems_of(make_bundle(tmp_path / "b", files=solutions_file(empty_step)))

    assert problems == [
        "solutions/train.jsonl:1 (task 't1'): field 'turns.0.calls': step 2 is an empty list: remove it, or "
        'list in it the calls the agent makes together (got [{"tool": "put_book", "arguments": {"title": '
        '"Dune"}}, []])'
    ]


def test_a_tool_called_within_a_step_of_several_calls_is_checked_against_the_tools_the_task_offers(tmp_path):
    together = {"id": "t1", "turns": [{"calls": [[{"tool": "put_book"}, {"tool": "put_bok"}]]}]}

    problems = problems_of(make_bundle(tmp_path / "b", files=solutions_file(together)))

    assert len(problems) == 1
    assert problems[0].startswith(
        "solutions/train.jsonl:1 (task 't1'): turn 1 calls tool 'put_bok', which the task does not offer; "
        "did you mean 'put_book'?"
    )


def test_a_second_solution_of_a_task_and_a_solutions_file_of_no_split_are_reported(tmp_path):
    files = {**solutions_file(SHELVE_DUNE, SHELVE_DUNE), "solutions/trian.jsonl": json.dumps(SHELVE_DUNE)}

    problems = problems_of(make_bundle(tmp_path / "b", files=files))

    assert sorted(problems) == [
        "solutions/train.jsonl:2: a second solution of task 't1'; keep one line per task",
        "solutions/trian.jsonl: split 'trian' has no tasks; did you mean 'train'?: name the file after a "
        "split of tasks/, or delete it",
    ]


USERS = "def reader(context, title):\n    return None\n"


def test_a_user_function_must_be_one_of_users_py_and_take_the_task_s_args(tmp_path):
    tasks = {
        "train": [
            a_task(id="t1", user={"function": "raeder", "args": {"title": "Dune"}}),
            a_task(id="t2", user={"function": "reader", "args": {"titel": "Dune"}}),
        ]
    }

    problems = problems_of(make_bundle(tmp_path / "b", tasks=tasks, files={"users.py": USERS}))

    assert problems == [
        "tasks/train.jsonl:1 (task 't1'): user: user function 'raeder' is not defined in users.py; did you "
        "mean 'reader'?",
        "tasks/train.jsonl:2 (task 't2'): user: user function 'reader' cannot take the task's args "
        "{'titel': 'Dune'}: missing a required argument: 'title'; it is called as reader(context, **args), "
        "so write `def reader(context, titel)`",
    ]


@pytest.mark.parametrize(
    ("source", "said"),
    [
        (
            "def caller(name, context):\n    return None\n",
            "user function 'caller' takes the task's arg 'name' first, where the context goes: it is called "
            "as caller(context, **args), so write `def caller(context, name)`",
        ),
        (
            "def caller(*, name):\n    return None\n",
            "user function 'caller' has no first parameter for the context: it is called as "
            "caller(context, **args), so write `def caller(context, name)`",
        ),
    ],
)
def test_a_user_function_without_the_context_first_is_told_the_signature_it_needs(source, said, tmp_path):
    tasks = {"train": [a_task(id="t1", user={"function": "caller", "args": {"name": "Ada"}})]}

    problems = problems_of(make_bundle(tmp_path / "b", tasks=tasks, files={"users.py": source}))

    assert problems == [f"tasks/train.jsonl:1 (task 't1'): user: {said}"]


def test_a_user_s_max_turns_must_leave_room_for_the_task_s_fixed_turns(tmp_path):
    user = {"function": "reader", "args": {"title": "Dune"}, "max_turns": 1}
    tasks = {"train": [a_task(turns=["One.", "Two."], user=user)]}

    (problem,) = problems_of(make_bundle(tmp_path / "b", tasks=tasks, files={"users.py": USERS}))

    assert problem == (
        "tasks/train.jsonl:1 (task 't1'): user: max_turns is 1, but the task fixes 2 turns: raise max_turns"
    )


@pytest.mark.parametrize(
    ("user", "problem"),
    [
        ({"functon": "reader"}, "field 'user.functon' is unknown; remove it or check its spelling"),
        ({"model_url": "http://127.0.0.1:9/v1", "model": "m"}, "field 'user.persona' is required"),
        ("talk", 'field \'user\': a user is {"function": NAME, "args": {...}} or {"model_url": URL,'),
    ],
)
def test_a_user_of_neither_form_is_refused_naming_the_field_that_is_wrong(tmp_path, user, problem):
    tasks = {"train": [a_task(user=user)]}

    problems = problems_of(make_bundle(tmp_path / "b", tasks=tasks, files={"users.py": USERS}))

    assert any(problem in found for found in problems), problems


def test_a_solution_of_a_task_with_a_user_plays_its_fixed_turns_and_at_most_max_turns(tmp_path):
    user = {"function": "reader", "args": {"title": "Dune"}, "max_turns": 3}
    tasks = {"train": [a_task(user=user)]}
    three = {**SHELVE_DUNE, "turns": SHELVE_DUNE["turns"] * 3}
    four = {**SHELVE_DUNE, "turns": SHELVE_DUNE["turns"] * 4}

    loaded = load_bundle(
        make_bundle(tmp_path / "ok", tasks=tasks, files={"users.py": USERS, **solutions_file(three)})
    )
    problems = problems_of(
        make_bundle(tmp_path / "long", tasks=tasks, files={"users.py": USERS, **solutions_file(four)})
    )

    assert len(loaded.solutions["train"]["t1"].turns) == 3
    assert problems == [
        "solutions/train.jsonl:1 (task 't1'): the solution plays 4 turns and the task fixes 1 turn and "
        'lets its user add up to 3 in all: write one {"calls": [...], "reply": ...} per turn of the task'
    ]


def test_a_task_with_a_user_tells_the_task_api_who_writes_its_later_turns_and_their_bound(tmp_path):
    tasks = {"train": [a_task(user={"function": "reader", "args": {"title": "Dune"}, "max_turns": 5})]}

    spec = (
        load_bundle(make_bundle(tmp_path / "b", tasks=tasks, files={"users.py": USERS})).task("train", 0).spec
    )

    assert (spec.turns, spec.user, spec.max_turns) == (1, "function", 5)


LISTING_SHELF = (
    SHELF
    + '''
    @tool
    def list_books(self, starting: str = "") -> list:
        """The books on the shelf whose title starts with a text.

        Args:
            starting: The titles' beginning.
        """
        return [book for book in self.books if book.startswith(starting)]
'''
)


def test_an_items_verifier_may_read_a_python_env_through_one_of_its_tools(tmp_path):
    check = {"type": "items", "env": "shelf", "tool": "list_books", "arguments": {"starting": "D"}}
    tasks = {"train": [a_task(verifiers=[{**check, "expected": ["Dune"]}])]}
    task = load_bundle(make_bundle(tmp_path / "b", envs={"shelf": LISTING_SHELF}, tasks=tasks)).task(
        "train", 0
    )
    episode = Episode(task)

    async def main():
        try:
            await episode.deploy()
            await episode.call_tool("put_book", {"title": "Dune"})
            await episode.call_tool("put_book", {"title": "Emma"})
            return await episode.end_turn("Shelved.")
        finally:
            await episode.teardown()

    assert asyncio.run(main()).score == 1.0


def test_an_items_verifier_s_tool_and_arguments_on_a_python_env_are_checked_at_load(tmp_path):
    tasks = {
        "train": [
            a_task(
                id="t1", verifiers=[{"type": "items", "env": "shelf", "tool": "list_bok", "expected": []}]
            ),
            a_task(
                id="t2",
                verifiers=[
                    {
                        "type": "items",
                        "env": "shelf",
                        "tool": "list_books",
                        "arguments": {"start": "D"},
                        "expected": [],
                    }
                ],
            ),
        ]
    }

    problems = problems_of(make_bundle(tmp_path / "b", envs={"shelf": LISTING_SHELF}, tasks=tasks))

    assert "env 'shelf' has no tool 'list_bok'; did you mean 'list_books'?" in problems[0]
    assert "the items verifier's arguments: list_books: argument 'start' is unknown" in problems[1]


def test_the_content_digest_counts_every_file_but_python_s_caches_and_version_control(tmp_path):
    root = make_bundle(tmp_path / "shelf")
    loaded = load_bundle(root).content_digest
    for cache in ("envs/__pycache__/shelf.cpython-311.pyc", ".git/HEAD", "verifiers.pyc"):
        (root / cache).parent.mkdir(parents=True, exist_ok=True)
        (root / cache).write_bytes(b"\0cache")
    cached = load_bundle(root).content_digest
    (root / "servers").mkdir()
    (root / "servers" / "notes.py").write_text("SHELVES = 3\n")
    added = load_bundle(root).content_digest

    assert loaded.startswith("sha256:")
    assert cached == loaded
    assert added != loaded


def test_skipping_broken_tasks_leaves_out_each_task_line_that_does_not_load_and_the_rest_close_ranks(
    tmp_path,
):
    lines = [
        a_task(id="first"),
        a_task(id="stray", agent="writer"),
        "{not json",
        a_task(id="last"),
        a_task(id="first"),
    ]
    tasks = {"train": "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)}
    root = make_bundle(tmp_path / "b", tasks=tasks)

    bundle = load_bundle(root, skip_broken_tasks=True)

    assert [(t.index, t.id) for t in bundle.tasks("train")] == [(0, "first"), (1, "last")]
    assert [(s.task, len(s.problems)) for s in bundle.skipped] == [
        ("tasks/train.jsonl:2", 1),
        ("tasks/train.jsonl:3", 1),
        ("tasks/train.jsonl:5", 1),
    ]
    assert bundle.skipped_summary() == (
        "skipped 3 of 5 tasks:\n"
        "  tasks/train.jsonl:2 (task 'stray'): agent 'writer' is not defined (choices: reader)\n"
        "  tasks/train.jsonl:3: malformed JSON: Expecting property name enclosed in double quotes "
        "(column 2)\n"
        "  tasks/train.jsonl:5: duplicate task id 'first' (first at tasks/train.jsonl:1); ids must be "
        "unique\n"
        f"(`agent-env check {root}` lists every problem)"
    )


def test_a_bundle_loaded_without_skipping_has_nothing_skipped_and_no_summary(tmp_path):
    bundle = load_bundle(make_bundle(tmp_path / "b"), skip_broken_tasks=True)

    assert bundle.skipped == () and bundle.skipped_summary() is None


def test_a_split_whose_every_task_is_skipped_is_gone_and_so_is_a_skipped_tasks_solution(tmp_path):
    tasks = {"train": [a_task(id="good")], "eval": [a_task(id="bad", agent="writer")]}
    solution = {"id": "bad", "turns": [{"calls": [{"tool": "put_book", "arguments": {"title": "Dune"}}]}]}
    files = {"solutions/eval.jsonl": json.dumps(solution) + "\n"}

    bundle = load_bundle(make_bundle(tmp_path / "b", tasks=tasks, files=files), skip_broken_tasks=True)

    assert list(bundle.splits) == ["train"] and bundle.solutions == {}
    assert [s.task for s in bundle.skipped] == ["tasks/eval.jsonl:1"]


@pytest.mark.parametrize(
    ("toml", "files", "where"),
    [
        (TOML + "\n[sandbox]\nprovider = 'cloud'\n", {}, "bundle.toml: sandbox.provider"),
        (TOML, {"solutions/train.jsonl": "{}\n"}, "solutions/train.jsonl:1"),
        (TOML, {"tasks/eval.json": json.dumps([{"id": "e"}])}, "tasks/eval.json (task 'e')"),
    ],
)
def test_a_problem_that_is_no_task_lines_own_stops_a_load_that_skips_broken_tasks(
    tmp_path, toml, files, where
):
    tasks = {"train": [a_task(id="good"), a_task(id="bad", agent="writer")]}
    root = make_bundle(tmp_path / "b", toml=toml, tasks=tasks, files=files)

    with pytest.raises(BundleError) as refused:
        load_bundle(root, skip_broken_tasks=True)

    wheres = [p.where for p in refused.value.problems]
    assert "tasks/train.jsonl:2 (task 'bad')" in wheres and any(w.startswith(where) for w in wheres)


def test_a_bundle_none_of_whose_tasks_loads_is_refused_even_when_skipping(tmp_path):
    tasks = {"train": [a_task(id="a", agent="writer"), a_task(id="b", agent="writer")]}

    with pytest.raises(BundleError) as refused:
        load_bundle(make_bundle(tmp_path / "b", tasks=tasks), skip_broken_tasks=True)

    assert [str(p) for p in refused.value.problems][-1] == (
        "tasks/: no task loads (each of the 2 task lines listed here has a problem), so skipping those "
        "that do not leaves nothing: fix them"
    )


TYPED_SHELF = '''
from agent_env import Env, tool
from pydantic import BaseModel, Field


class Book(BaseModel):
    title: str
    pages: int = Field(ge=1)


class ShelfSeed(BaseModel):
    books: list[Book] = []


class Shelf(Env):
    """Books on a shelf, seeded by the shape its setup declares."""

    def setup(self, seed: ShelfSeed) -> None:
        self.books = [book.title for book in seed.books]
        self.seeded_as = type(seed).__name__

    def items(self):
        return list(self.books)

    @tool
    def put_book(self, title: str) -> str:
        """Put a book on the shelf.

        Args:
            title: The book's title.
        """
        self.books.append(title)
        return "ok"
'''


SHELF_WITHOUT_A_DOCSTRING = '''
from agent_env import Env, tool


class Shelf(Env):
    """Books on a shelf."""

    def items(self):
        return []

    @tool
    def put_book(self, title: str) -> str:
        return "ok"
'''


def test_a_seed_of_the_wrong_shape_for_a_typed_setup_is_refused_at_load_naming_line_and_field(tmp_path):
    tasks = {
        "train": [
            a_task(id="good", seed={"shelf": {"books": [{"title": "Emma", "pages": 474}]}}),
            a_task(id="bad", seed={"shelf": {"books": [{"title": "Emma", "pages": "many"}]}}),
            a_task(id="missing", seed={"shelf": {"books": [{"pages": 3}]}}),
        ]
    }

    problems = problems_of(make_bundle(tmp_path / "b", envs={"shelf": TYPED_SHELF}, tasks=tasks))

    assert len(problems) == 2, problems
    assert problems[0].startswith("tasks/train.jsonl:2 (task 'bad'): seed['shelf']: field 'books.0.pages'")
    assert "(the seed Shelf.setup declares)" in problems[0]
    assert problems[1].startswith(
        "tasks/train.jsonl:3 (task 'missing'): seed['shelf']: field 'books.0.title'"
    )
    assert "is required" in problems[1]


def test_a_typed_setup_is_given_its_seed_validated_as_the_declared_model(tmp_path):
    seed = {"shelf": {"books": [{"title": "Emma", "pages": 474}]}}
    verifiers = [{"type": "items", "env": "shelf", "expected": ["Emma", "Dune", "seeded as ShelfSeed"]}]
    tasks = {"train": [a_task(seed=seed, verifiers=verifiers)]}
    listing = TYPED_SHELF.replace(
        "return list(self.books)", "return [*self.books, f'seeded as {self.seeded_as}']"
    )
    episode = Episode(
        load_bundle(make_bundle(tmp_path / "b", envs={"shelf": listing}, tasks=tasks)).task("train", 0)
    )

    async def main():
        try:
            await episode.deploy()
            await episode.call_tool("put_book", {"title": "Dune"})
            return await episode.end_turn("Shelved.")
        finally:
            await episode.teardown()

    assert asyncio.run(main()).score == 1.0


def test_a_seed_annotation_that_does_not_resolve_is_reported_at_its_line_with_the_fix(tmp_path):
    broken = TYPED_SHELF.replace("def setup(self, seed: ShelfSeed)", "def setup(self, seed: 'NoSuchSeed')")

    line = next(n for n, text in enumerate(broken.splitlines(), 1) if "def setup" in text)

    (problem,) = problems_of(make_bundle(tmp_path / "b", envs={"shelf": broken}))

    assert problem.startswith(f"envs/shelf.py:{line}: the annotation of setup's 'seed' does not resolve")
    assert "import the type it names at the module's top level" in problem


def test_a_tool_without_a_docstring_is_one_problem_not_one_more_for_each_task_or_solution_of_its_agent(
    tmp_path,
):
    tasks = [a_task(id=f"t{n}") for n in range(1, 4)]
    solutions = "".join(json.dumps({**SHELVE_DUNE, "id": task["id"]}) + "\n" for task in tasks)
    root = make_bundle(
        tmp_path / "b",
        envs={"shelf": SHELF_WITHOUT_A_DOCSTRING},
        tasks={"train": tasks},
        files={"solutions/train.jsonl": solutions},
    )

    assert problems_of(root) == [
        "envs/shelf.py:11: tool 'put_book': has no docstring summary; say what the tool does in its first "
        "line, then describe each argument under Args: ('title: ...')"
    ]


def test_a_solution_of_a_task_no_split_lists_is_still_reported_beside_a_task_whose_agent_did_not_load(
    tmp_path,
):
    toml = TOML + '\n[agents.packer]\nenvs = ["box"]\n'
    envs = {"shelf": SHELF, "box": SHELF_WITHOUT_A_DOCSTRING}
    tasks = {"train": [a_task(), a_task(id="t2", agent="packer")]}
    files = solutions_file(SHELVE_DUNE, {**SHELVE_DUNE, "id": "t2"}, {**SHELVE_DUNE, "id": "t9"})

    problems = problems_of(make_bundle(tmp_path / "b", toml=toml, envs=envs, tasks=tasks, files=files))

    assert [p.split(":")[0] for p in problems] == ["envs/box.py", "solutions/train.jsonl"]
    assert problems[1].startswith("solutions/train.jsonl:3: task 't9' is not a task of split 'train'")

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_env.cli._play import describe_tools
from tst.support.mcp_bundles import NOTE_MILK, http_notes_server, http_server, notes_bundle
from tst.support.wharf import wharf_with_a_broken_task

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "wharf"


def agent_env(*args, stdin=""):
    return subprocess.run(
        [sys.executable, "-m", "agent_env.cli", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_check_says_ok_with_the_bundles_contents_for_a_good_bundle():
    done = agent_env("check", EXAMPLE)

    assert done.returncode == 0
    assert done.stdout.splitlines()[0] == "wharf: ok: 2 envs, 5 agents, tasks: eval 11, train 33"


def test_check_notes_the_tasks_scored_on_their_reply_whose_prompts_never_say_to_reply_with_end_turn():
    done = agent_env("check", EXAMPLE)

    assert done.returncode == 0
    ok, note = done.stdout.strip().splitlines()
    assert ok == "wharf: ok: 2 envs, 5 agents, tasks: eval 11, train 33"
    assert note.startswith("note: 4 tasks are scored on their reply but never tell the model how to give one")
    assert "eval/count-bay-100" in note and "what the model passes to end_turn" in note


def test_check_lists_every_problem_and_exits_1_for_a_broken_bundle(tmp_path):
    (tmp_path / "bundle.toml").write_text('[agents.a]\nenvs = ["nope"]\n')

    done = agent_env("check", tmp_path)

    assert done.returncode == 1
    assert done.stderr.startswith(f"BundleError: 3 problems in {tmp_path}")
    assert (
        "envs/: missing" in done.stderr
        and "env 'nope'" in done.stderr
        and "tasks/: no task files" in done.stderr
    )


def test_check_reports_a_tool_without_a_docstring_once_not_again_for_each_task_and_solution_of_its_agent(
    tmp_path,
):
    bundle = shutil.copytree(EXAMPLE, tmp_path / "wharf")
    dock = bundle / "envs" / "dock.py"
    source = dock.read_text()
    start = source.index("    def move_crate")
    documented = source[start : source.index("        if crate not in self.crates", start)]
    dock.write_text(source.replace(documented, "    def move_crate(self, crate: str, to_bay: Bay) -> str:\n"))

    done = agent_env("check", bundle)

    assert done.returncode == 1
    assert done.stderr.splitlines()[1:] == [
        f"  envs/dock.py:{source[:start].count(chr(10))}: tool 'move_crate': "
        "has no docstring summary; say what the tool does in its first line, then describe each argument "
        "under Args: ('crate: ...', 'to_bay: ...')"
    ]
    assert done.stderr.startswith(f"BundleError: 1 problem in {bundle}")


def test_tasks_prints_a_table_of_index_id_toolset_and_turns():
    done = agent_env("tasks", EXAMPLE, "--split", "eval")

    lines = done.stdout.splitlines()
    assert lines[0].split() == ["split", "index", "id", "toolset", "turns"]
    assert lines[2].split() == ["eval", "0", "store-crate-100", "dock", "1"]
    assert ["eval", "2", "store-then-move-100", "dock", "2"] in [line.split() for line in lines]
    assert len(lines) == 2 + 11


def test_tasks_names_the_splits_there_are_when_asked_for_an_unknown_one():
    done = agent_env("tasks", EXAMPLE, "--split", "dev")

    assert done.returncode == 2 and "unknown split 'dev' (splits: eval, train)" in done.stderr


def test_a_person_plays_a_two_turn_task_in_the_terminal_and_sees_each_prompt_and_the_score():
    moves = "\n".join(
        [
            'add_crate {"crate": "C16", "bay": 2}',
            "/end Stored.",
            'move_crate {"crate": "C16", "to_bay": 6}',
            "/end Moved.",
        ]
    )

    done = agent_env("play", EXAMPLE, "--split", "train", "--index", 2, stdin=moves + "\n")

    out = done.stdout
    assert done.returncode == 0, done.stderr
    assert "turn 1, user: A dry crate labelled C16 is on the quay. Store it in bay 2." in out
    assert 'add_crate(crate: string, bay: integer 1..6, kind?: "dry"|"cold"|"fragile" = "dry")' in out
    assert "crate C16 (dry) stored in bay 2" in out
    assert "turn 2, user: Change of plan: move the crate you just stored to bay 6." in out
    assert out.rstrip().endswith("score: 1.00")


def test_a_bad_call_in_the_terminal_shows_the_error_and_the_play_goes_on():
    done = agent_env(
        "play", EXAMPLE, "--index", 1, stdin='move_crate {"crate": 7}\nlist_crates nonsense\n/end\n'
    )

    assert "error: move_crate: argument 'crate': Input should be a valid string (got 7)" in done.stdout
    assert "error: the arguments are not JSON" in done.stdout
    assert "score: 0.00" in done.stdout and done.returncode == 0


def test_a_play_left_at_end_of_input_is_torn_down_unscored_and_exits_1():
    done = agent_env("play", EXAMPLE, "--index", 10, stdin='bash {"command": "pwd"}\n')

    sandbox = next(line for line in done.stdout.splitlines() if "agent-env-sandbox-" in line).split("> ")[-1]
    assert "abandoned" in done.stdout and done.returncode == 1
    assert not Path(sandbox).exists()


def test_replay_plays_every_example_task_and_every_reference_play_scores_as_expected():
    done = agent_env("replay", EXAMPLE)

    assert done.returncode == 0, done.stdout
    assert done.stdout.rstrip().endswith("44 of 44 tasks scored as their reference play expects")


def test_replay_of_a_bundle_with_tasks_that_have_no_reference_play_passes_saying_how_many_have_none(tmp_path):
    bundle = tmp_path / "wharf"
    shutil.copytree(EXAMPLE, bundle, ignore=shutil.ignore_patterns("__pycache__"))
    plays = (bundle / "solutions" / "train.jsonl").read_text().splitlines(keepends=True)
    (bundle / "solutions" / "train.jsonl").write_text("".join(plays[2:]))

    done = agent_env("replay", bundle, "--split", "train")

    assert done.returncode == 0, done.stdout
    expected = (
        f"{len(plays) - 2} of {len(plays) - 2} tasks scored as their reference play expects; 2 without "
    )
    assert done.stdout.rstrip().endswith(expected + "one, scored by their verifiers alone")
    assert sum("no solution" in line for line in done.stdout.splitlines()) == 2


LIBRARY = EXAMPLE.parent / "library"


@pytest.mark.needs("mcp_installed")
def test_replay_plays_the_library_s_mcp_catalog_and_simulated_members_and_every_play_scores_1():
    done = agent_env("replay", LIBRARY)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 of 7 tasks scored as their reference play expects" in done.stdout
    assert ["train", "3", "desk-ada", "catalog", "2", "1.00", "1.00", "ok"] in [
        line.split()[:7] + line.split()[8:] for line in done.stdout.splitlines()
    ]


@pytest.mark.needs("mcp_installed")
def test_replay_plays_a_bundle_whose_env_is_a_server_reached_over_streamable_http(tmp_path):
    with http_notes_server() as server:
        root = notes_bundle(tmp_path, http_server(server.url), solutions=[NOTE_MILK])

        done = agent_env("replay", root)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 of 1 tasks scored as their reference play expects" in done.stdout


@pytest.mark.needs("mcp_installed")
def test_tasks_shows_a_task_with_a_simulated_user_as_its_fixed_turns_and_its_bound():
    done = agent_env("tasks", LIBRARY, "--split", "eval")

    assert ["eval", "1", "desk-eve", "catalog", "1+user<=4"] in [
        line.split() for line in done.stdout.splitlines()
    ]


@pytest.mark.needs("mcp_installed")
def test_a_person_plays_against_a_simulated_member_whose_answer_depends_on_their_reply():
    moves = [
        "/end Which book would you like, and what is your name?",
        'lend_book {"book_id": "B1", "member": "Ada"}',
        "/end Here you are.",
    ]

    done = agent_env("play", LIBRARY, "--index", 3, stdin="\n".join(moves) + "\n")

    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "then a simulated user (user function 'member'), up to 4 in all" in out
    assert "turn 2, user (simulated): I would like Dune. My name is Ada." in out
    assert "lent Dune to Ada" in out
    assert out.rstrip().endswith("score: 1.00")


def test_replay_says_why_a_wrong_play_scored_as_it_did_each_verifier_and_the_first_failed_call(tmp_path):
    depot = tmp_path / "depot"
    shutil.copytree(EXAMPLE.parent / "depot", depot, ignore=shutil.ignore_patterns("__pycache__"))
    (depot / "tasks" / "train.jsonl").write_text((depot / "tasks" / "train.jsonl").read_text().split("\n")[0])
    wrong = {"id": "train-store-000", "turns": [{"calls": [{"tool": "ship", "arguments": {"box": "Z99"}}]}]}
    (depot / "solutions" / "train.jsonl").write_text(json.dumps(wrong) + "\n")

    done = agent_env("replay", depot, "--split", "train")

    assert done.returncode == 1
    assert "0 of 1 tasks scored as their reference play expects" in done.stdout
    assert (
        '  train/0 train-store-000: verifiers[0] (items): 0; first failed call: ship({"box": "Z99"}): '
        "ship failed: ValueError: there is no box Z99 (code: TOOL_ERROR)"
    ) in done.stdout.splitlines()


def manifest_totals(tmp_path: Path, first_total: str) -> Path:
    """The wharf with two train tasks, each scored by a bash check that says what total.txt holds: the
    first task's reference play writes `first_total`, the second's the right total."""
    wharf = tmp_path / "wharf"
    shutil.copytree(EXAMPLE, wharf, ignore=shutil.ignore_patterns("__pycache__"))
    tasks = [json.loads(line) for line in (wharf / "tasks" / "train.jsonl").read_text().splitlines()]
    kept = [task for task in tasks if task["id"] in ("manifest-total-000", "manifest-total-001")]
    for task in kept:
        check = task["verifiers"][0]
        check["command"] = 'echo "\033[1mtotal.txt holds:\033[0m $(cat total.txt)"; ' + check["command"]
    (wharf / "tasks" / "train.jsonl").write_text("".join(json.dumps(task) + "\n" for task in kept))
    plays = [json.loads(line) for line in (wharf / "solutions" / "train.jsonl").read_text().splitlines()]
    plays = [play for play in plays if play["id"] in ("manifest-total-000", "manifest-total-001")]
    plays[0]["turns"][0]["calls"] = [
        {"tool": "bash", "arguments": {"command": f"echo {first_total} > total.txt"}}
    ]
    (wharf / "solutions" / "train.jsonl").write_text("".join(json.dumps(play) + "\n" for play in plays))
    return wharf


def test_replay_shows_below_a_wrong_play_what_its_verifiers_said_and_with_a_flag_what_the_others_did(
    tmp_path,
):
    wharf = manifest_totals(tmp_path, first_total="7")

    done = agent_env("replay", wharf, "--split", "train")
    flagged = agent_env("replay", wharf, "--split", "train", "--verifier-output")

    assert done.returncode == flagged.returncode == 1
    lines = done.stdout.splitlines()
    wrong = lines.index("  train/0 manifest-total-000: verifiers[0] (bash): 0")
    assert lines[wrong + 1 : wrong + 4] == [
        "    verifiers[0] (bash) said:",
        "      total.txt holds: 7",
        "      [exit code: 1]",
    ]
    assert "what the verifiers said of the other plays" not in done.stdout
    others = flagged.stdout.split("\n\n")[-2]
    assert others.splitlines() == [
        "what the verifiers said of the other plays:",
        "  train/1 manifest-total-001",
        "    verifiers[0] (bash) said:",
        "      total.txt holds: 292",
    ]
    assert untimed(flagged.stdout.replace(f"\n{others}\n", "")) == untimed(done.stdout)


def untimed(out: str) -> str:
    """`replay`'s output without its times (each play's seconds, the whole run's), which differ run to run."""
    out = re.sub(r"\b\d+\.\d\d(?= +(ok|WRONG)$)", "-", out, flags=re.MULTILINE)
    return re.sub(r"played in [\d.]+ s", "played in - s", out)


def test_a_play_in_the_terminal_shows_what_each_verifier_said_and_its_score_before_the_task_s_score():
    done = agent_env("play", EXAMPLE, "--index", 10, stdin='bash {"command": "echo 12 > total.txt"}\n/end\n')

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith(
        "verifiers[0] (bash) said:\n  [exit code: 1]\nverifiers[0] (bash): 0.00\nscore: 0.00"
    )


def test_the_terminal_shows_an_argument_s_bounds_pattern_length_and_default_as_its_schema_has_them():
    schema = {
        "type": "function",
        "function": {
            "name": "refund",
            "description": "Refund a card.",
            "parameters": {
                "type": "object",
                "properties": {
                    "card": {"type": "string", "pattern": "^[0-9]{4}$"},
                    "amount": {"type": "integer", "minimum": 1, "maximum": 5000},
                    "note": {"type": "string", "maxLength": 80, "default": ""},
                    "rate": {"type": "number", "exclusiveMinimum": 0},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                },
                "required": ["card", "amount"],
            },
        },
    }

    assert describe_tools([schema]) == (
        "  refund(card: string matching ^[0-9]{4}$, amount: integer 1..5000, "
        'note?: string length <= 80 = "", rate?: number > 0, '
        "tags?: array of string items <= 3) - Refund a card."
    )


SKIPPED = (
    "skipped 1 of 3 tasks:\n"
    "  tasks/train.jsonl:3 (task 'stray-000'): agent 'stowaway' is not defined (choices: clerk, cook, "
    "deckhand, harbormaster, quartermaster)\n"
)


def test_replay_with_skip_broken_tasks_lists_each_task_left_out_and_its_problem_then_replays_the_others(
    tmp_path,
):
    bundle = wharf_with_a_broken_task(tmp_path / "wharf")

    done = agent_env("replay", bundle, "--skip-broken-tasks")

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == SKIPPED + f"(`agent-env check {bundle}` lists every problem)\n"
    assert done.stdout.rstrip().endswith("2 of 2 tasks scored as their reference play expects")


def test_replay_without_skip_broken_tasks_is_stopped_by_one_broken_task_naming_it(tmp_path):
    done = agent_env("replay", wharf_with_a_broken_task(tmp_path / "wharf"))

    assert done.returncode == 1
    assert "tasks/train.jsonl:3 (task 'stray-000'): agent 'stowaway' is not defined" in done.stderr


def option_help(command: str, flag: str) -> str:
    """What `agent-env COMMAND --help` says of `flag`, its whitespace made single spaces."""
    lines = agent_env(command, "--help").stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(flag))
    more = (i for i in range(start + 1, len(lines)) if not lines[i].startswith("   "))  # the next option
    end = next(more, len(lines))
    return " ".join(" ".join(lines[start:end]).split()[1:])


def test_serve_replay_and_eval_share_one_skip_flag_and_replay_takes_allow_internet_as_serve_does():
    skips = {option_help(command, "--skip-broken-tasks") for command in ("serve", "replay", "eval")}
    internet = {option_help(command, "--allow-internet") for command in ("serve", "replay")}

    assert len(skips) == 1 and next(iter(skips)).startswith("leave out the tasks that do not load")
    assert len(internet) == 1 and next(iter(internet)).startswith("give the tasks that ask for the internet")


def test_check_and_replay_number_a_task_s_verifiers_the_same_way(tmp_path):
    from tst.support.bundles import a_task, make_bundle

    checks = [
        {"type": "items", "env": "shelf", "expected": ["Dune"]},
        {"type": "function", "function": "read_it"},
    ]
    solution = {"id": "t1", "turns": [{"calls": [{"tool": "put_book", "arguments": {"title": "Dune"}}]}]}
    files = {"solutions/train.jsonl": json.dumps(solution) + "\n"}
    misspelt = make_bundle(
        tmp_path / "misspelt",
        tasks={"train": [a_task(verifiers=[*checks[:1], {"type": "function", "function": "read_i"}])]},
        verifiers="def read_it(context):\n    return 0.0\n",
        files=files,
    )
    played = make_bundle(
        tmp_path / "played",
        tasks={"train": [a_task(verifiers=checks)]},
        verifiers="def read_it(context):\n    return 0.0\n",
        files=files,
    )

    checked = agent_env("check", misspelt)
    replayed = agent_env("replay", played)

    assert "tasks/train.jsonl:1 (task 't1'): verifiers[1]: verifier function 'read_i'" in checked.stderr
    assert "  train/0 t1: verifiers[0] (items): 1, verifiers[1] (read_it): 0" in replayed.stdout.splitlines()

"""MCP servers as a bundle declares them, `[mcp.NAME]` in bundle.toml or `envs/NAME.toml`: what loads,
and every mistake refused at load with where it is and the fix, before any server is started."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_env import BundleError, load_bundle
from agent_env.mcp import McpEnvDefinition
from tst.support.mcp_bundles import SERVER, a_notes_task, notes_bundle, stdio_server


def problems_of(root: Path) -> list[str]:
    with pytest.raises(BundleError) as caught:
        load_bundle(root)
    return [str(p) for p in caught.value.problems]


@pytest.mark.needs("mcp_installed")
def test_a_server_declared_in_bundle_toml_is_an_env_whose_tools_the_task_api_lists_as_unknown(tmp_path):
    bundle = load_bundle(notes_bundle(tmp_path, stdio_server()))

    env = bundle.envs["notes"]
    spec = bundle.task("train", 0).spec
    assert isinstance(env, McpEnvDefinition)
    assert (env.server.command, env.server.args) == (sys.executable, (str(SERVER),))
    assert spec.toolset.name == "notes" and spec.toolset.envs == ("notes",)
    assert spec.toolset.tools is None and spec.toolset.tool_timeouts == {}


@pytest.mark.needs("mcp_installed")
def test_a_server_may_be_a_file_of_its_own_under_envs_beside_python_envs(tmp_path):
    root = notes_bundle(tmp_path, "", agent='envs = ["notes", "shelf"]')
    (root / "envs").mkdir()
    (root / "envs" / "notes.toml").write_text('url = "http://127.0.0.1:9/mcp"\nheaders = {"X-Team" = "a"}\n')
    (root / "envs" / "shelf.py").write_text("from agent_env import Env\n\nclass Shelf(Env):\n    pass\n")

    bundle = load_bundle(root)

    assert isinstance(bundle.envs["notes"], McpEnvDefinition)
    assert bundle.envs["notes"].server.headers == {"X-Team": "a"}
    assert bundle.task("train", 0).toolset.name == "notes+shelf"


@pytest.mark.needs("mcp_installed")
def test_placeholders_resolve_to_the_bundle_s_folder_the_interpreter_and_the_environment(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("NOTES_TOKEN", "s3cret")
    server = (
        '[mcp.notes]\ncommand = "${python}"\nargs = ["${bundle}/server.py"]\n'
        'env = {TOKEN = "${env:NOTES_TOKEN}"}\n'
    )

    env = load_bundle(notes_bundle(tmp_path, server)).envs["notes"]

    assert isinstance(env, McpEnvDefinition)
    assert env.server.command == sys.executable
    assert env.server.args == (f"{tmp_path.resolve()}/server.py",)
    assert env.server.env == {"TOKEN": "s3cret"}


@pytest.mark.needs("mcp_installed")
def test_an_unknown_placeholder_or_an_unset_variable_is_refused_naming_the_ones_there_are(tmp_path):
    server = '[mcp.notes]\ncommand = "${pyhton}"\nenv = {TOKEN = "${env:NO_SUCH_VARIABLE_HERE}"}\n'

    problems = problems_of(notes_bundle(tmp_path, server))

    assert problems == [
        "bundle.toml: mcp.notes: unknown placeholder ${pyhton} "
        "(placeholders: ${bundle}, ${python}, ${env:NAME})",
        "bundle.toml: mcp.notes: ${env:NO_SUCH_VARIABLE_HERE}: the variable NO_SUCH_VARIABLE_HERE is not set "
        "where the bundle loads; set it",
    ]


@pytest.mark.parametrize(
    ("table", "wrong"),
    [
        ('url = "http://127.0.0.1:9/mcp"\ncommand = "x"', "give either 'command'"),
        ("start_timeout_s = 5", "give either 'command'"),
        ('url = "http://127.0.0.1:9/mcp"\nargs = ["-v"]', "args only go with 'command'; remove them"),
        ('command = "x"\nheaders = {A = "b"}', "headers only go with 'url'; remove them"),
        ('url = "ftp://host/mcp"', "field 'mcp.notes.url': String should match pattern '^https?://'"),
        (
            'command = "x"\ncall_timeout_s = 0',
            "field 'mcp.notes.call_timeout_s': Input should be greater than 0",
        ),
        ('command = "x"\nrename = {"read-file" = "read file"}', "rename maps 'read-file' to 'read file'"),
        ('command = "x"\ncomand = "y"', "field 'mcp.notes.comand' is unknown"),
    ],
)
def test_a_server_s_settings_that_do_not_make_sense_are_refused_saying_why(tmp_path, table, wrong):
    (problem,) = problems_of(notes_bundle(tmp_path, f"[mcp.notes]\n{table}\n"))

    assert problem.startswith("bundle.toml: ")
    assert wrong in problem


def test_an_env_name_a_toolset_name_could_not_hold_is_refused(tmp_path):
    problems = problems_of(notes_bundle(tmp_path, '[mcp."notes+more"]\ncommand = "x"\n', tasks=[]))

    assert (
        "bundle.toml: mcp.notes+more: env name 'notes+more' must match ^[A-Za-z_][A-Za-z0-9_-]*$; rename it"
        in (problems)
    )


@pytest.mark.needs("mcp_installed")
def test_one_env_name_declared_twice_is_refused(tmp_path):
    root = notes_bundle(tmp_path, stdio_server())
    (root / "envs").mkdir()
    (root / "envs" / "notes.toml").write_text('command = "x"\n')

    assert problems_of(root) == [
        "envs/notes.toml: env 'notes' is also [mcp.notes] in bundle.toml; keep one of the two"
    ]


def test_a_server_named_as_a_python_env_is_refused(tmp_path):
    root = notes_bundle(tmp_path, stdio_server())
    (root / "envs").mkdir()
    (root / "envs" / "notes.py").write_text("from agent_env import Env\n\nclass Notes(Env):\n    pass\n")

    assert "bundle.toml: mcp.notes: env 'notes' is also envs/notes.py; an env is a module or a server" in (
        problems_of(root)
    )


@pytest.mark.needs("mcp_installed")
def test_an_items_verifier_on_a_server_must_name_the_tool_that_returns_the_items(tmp_path):
    task = a_notes_task(verifiers=[{"type": "items", "env": "notes", "expected": ["milk"]}])

    (problem,) = problems_of(notes_bundle(tmp_path, stdio_server(), tasks=[task]))

    assert "env 'notes' is an MCP server: name the tool that returns its items" in problem


@pytest.mark.needs("mcp_installed")
def test_a_url_server_takes_no_task_s_seed_since_every_episode_shares_it(tmp_path):
    task = a_notes_task(seed={"notes": {"notes": ["milk"]}})

    (problem,) = problems_of(
        notes_bundle(tmp_path, '[mcp.notes]\nurl = "http://127.0.0.1:9/mcp"\n', tasks=[task])
    )

    assert (
        "seed names env 'notes', an MCP server every episode shares (a url): it takes no task's seed"
        in problem
    )


@pytest.mark.needs("mcp_installed")
def test_a_bundle_of_servers_alone_needs_no_envs_folder_and_one_of_neither_is_told_both_ways(tmp_path):
    load_bundle(notes_bundle(tmp_path / "servers", stdio_server()))

    task = a_notes_task(verifiers=[{"type": "reply", "contains": "milk"}])
    problems = problems_of(notes_bundle(tmp_path / "neither", "", agent="envs = []", tasks=[task]))

    assert problems == [
        "envs/: missing; put one Python module per env in envs/ (envs/dock.py, ...), or declare an MCP "
        "server as an env ([mcp.NAME] in bundle.toml)"
    ]

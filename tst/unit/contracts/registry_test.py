"""The parts the engine runs are found by their entry points: this distribution's are its parts' own,
and another installed package's sandbox provider or form of task folders joins them, by name, with no
change to agent_env."""

from __future__ import annotations

import asyncio
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_env import BundleError, Episode, load_bundle
from agent_env._contracts import registry
from tst.support.bundles import a_task, make_bundle
from tst.support.layer_map import MAP, layer_table, row_of

PYPROJECT = MAP.parent.parent / "pyproject.toml"
ROW_OF_KIND = {"sandbox": "sandbox", "mcp": "mcp", "users": "users", "judges": "judges", "loaders": "harbor"}
"""The row of the map whose modules register each kind of part."""
LOADED: dict[str, tuple[pytest.MarkDecorator, ...]] = {
    "sandbox.local": (),
    "sandbox.docker": (),
    "mcp.start": (pytest.mark.needs("mcp_installed"),),  # its module imports the MCP SDK
    "users.simulated": (),
    "judges.episode": (),
    "judges.seat": (),
    "loaders.harbor": (),
}
"""Each part this distribution registers, and what loading it needs."""

PLUGIN = """
from pathlib import Path

from agent_env import load_bundle
from agent_env.sandbox import LocalSandboxProvider


class NamedLocal(LocalSandboxProvider):
    name = "elsewhere"


def provider(settings, *, allow_network):
    return NamedLocal()


def impostor(settings, *, allow_network):
    raise AssertionError("a name agent_env registers is never another package's")


class Plain:
    # Task folders marked by a plain.txt, whose tasks are the bundle in their inner folder.

    def folder(self, path):
        return Path(path) if (Path(path) / "plain.txt").is_file() else None

    def load(self, folder, *, shown, skip_broken_tasks, build_concurrency):
        return load_bundle(folder / "inner", skip_broken_tasks=skip_broken_tasks)


LOADER = Plain()
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An installed package, `elsewhere`, with a sandbox provider of its own and one that claims `local`."""
    site = tmp_path / "site"
    info = site / "elsewhere-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: elsewhere\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[agent_env.parts]\nsandbox.elsewhere = elsewhere_sandbox:provider\n"
        "sandbox.local = elsewhere_sandbox:impostor\nloaders.plain = elsewhere_sandbox:LOADER\n"
    )
    (site / "elsewhere_sandbox.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    registry.registered.cache_clear()
    registry.part.cache_clear()
    yield
    sys.modules.pop("elsewhere_sandbox", None)
    registry.registered.cache_clear()
    registry.part.cache_clear()


def bash_in_first_task(bundle: Path, command: str) -> str:
    """What bash answers `command` with in an episode of the bundle's first train task."""

    async def play() -> str:
        episode = Episode(load_bundle(bundle).task("train", 0))
        await episode.deploy()
        try:
            return await episode.call_tool("bash", {"command": command})
        finally:
            await episode.teardown()

    return asyncio.run(play())


def declared_parts() -> dict[str, str]:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    parts: dict[str, str] = project["entry-points"][registry.GROUP]
    return parts


def test_every_part_the_engine_runs_is_registered_by_a_module_of_its_part() -> None:
    rows = layer_table(MAP.read_text(encoding="utf-8"))

    declared = declared_parts()
    owners = {name: row_of(value.split(":")[0], rows) for name, value in declared.items()}

    assert owners == {name: ROW_OF_KIND[name.split(".")[0]] for name in declared}
    assert set(owners.values()) == set(ROW_OF_KIND.values())
    assert set(ROW_OF_KIND.values()) <= rows["engine"].never_rows


@pytest.mark.parametrize("name", [pytest.param(name, marks=marks) for name, marks in LOADED.items()])
def test_each_part_loads_what_it_registered(name: str) -> None:
    loaded = registry.part(name)

    if name.startswith(registry.LOADER_PREFIX):
        assert callable(loaded.folder) and callable(loaded.load)
    else:
        assert callable(loaded)


def test_every_part_declared_is_loaded_above() -> None:
    assert sorted(declared_parts()) == sorted(LOADED)


def test_the_registry_holds_exactly_the_parts_pyproject_declares() -> None:
    assert {name: entry.value for name, entry in registry.registered().items()} == declared_parts()


def test_another_package_s_sandbox_provider_plays_a_bundle_that_names_it(
    plugin: None, tmp_path: Path
) -> None:
    bundle = make_bundle(
        tmp_path / "bundle",
        toml='[sandbox]\nprovider = "elsewhere"\n\n[agents.reader]\nenvs = ["shelf"]\nbash = true\n',
        tasks={"train": [a_task()]},
    )

    assert registry.sandbox_names() == ("docker", "local", "elsewhere")
    assert "from elsewhere" in bash_in_first_task(bundle, "echo from elsewhere")
    assert registry.sandbox_provider("elsewhere").name == "elsewhere"


def test_a_name_this_distribution_registers_stays_its_own_whatever_else_is_installed(plugin: None) -> None:
    assert registry.sandbox_provider("local").name == "local"


def test_a_bundle_naming_a_provider_no_package_registers_is_told_the_ones_there_are(tmp_path: Path) -> None:
    bundle = make_bundle(
        tmp_path / "bundle", toml='[sandbox]\nprovider = "elswhere"\n\n[agents.reader]\nenvs = ["shelf"]\n'
    )

    with pytest.raises(BundleError, match=r"unknown sandbox provider 'elswhere'") as caught:
        load_bundle(bundle)

    assert "docker" in str(caught.value) and "local" in str(caught.value)


def test_a_part_that_is_not_registered_says_how_to_install_the_package() -> None:
    with pytest.raises(registry.PartMissingError, match=r"install it \(`pip install -e \.` in a checkout"):
        registry.part("sandbox.nowhere")


def test_another_package_s_form_of_task_folders_is_loaded_by_its_loader(plugin: None, tmp_path: Path) -> None:
    make_bundle(tmp_path / "tasks" / "inner")
    (tmp_path / "tasks" / "plain.txt").write_text("tasks in the plain form\n")

    bundle = load_bundle(tmp_path / "tasks")

    assert registry.registered_under(registry.LOADER_PREFIX) == ("harbor", "plain")
    assert [task.id for task in bundle.tasks("train")] == ["t1"]


def test_a_bundle_folder_played_with_this_distribution_s_parts_never_reads_other_packages_metadata(
    tmp_path: Path,
) -> None:
    bundle = make_bundle(
        tmp_path / "bundle",
        toml='[sandbox]\nprovider = "local"\n\n[agents.reader]\nenvs = ["shelf"]\nbash = true\n',
    )
    registry.registered.cache_clear()

    assert "here" in bash_in_first_task(bundle, "echo here")
    assert registry.registered.cache_info().currsize == 0

import pytest

from tst.util import capabilities


class FakeItem:
    """Just what `capabilities.apply` reads and writes of a collected test."""

    nodeid = "tst/x_test.py::test_x"

    def __init__(self, *needed):
        self.marks = [pytest.mark.needs(*needed).mark]

    def iter_markers(self, name):
        return [m for m in self.marks if m.name == name]

    def add_marker(self, marker):
        self.marks.append(marker.mark)

    @property
    def skip_reasons(self):
        return [m.kwargs["reason"] for m in self.marks if m.name == "skip"]


@pytest.fixture
def machine(monkeypatch):
    present = set()
    monkeypatch.setattr(capabilities, "has", lambda name: name in present)
    monkeypatch.delenv("AGENT_ENV_REQUIRE", raising=False)
    return present


def test_a_test_needing_a_missing_capability_is_skipped_with_the_one_fixed_reason_naming_it(machine):
    item = FakeItem("docker_engine")

    capabilities.apply(item)

    assert item.skip_reasons == [
        "missing capability: docker_engine (start a Docker engine: see ../shared/reference/docker-engine.md)"
    ]


def test_a_test_needing_a_capability_the_machine_has_runs(machine):
    machine.add("trl_installed")
    item = FakeItem("trl_installed")

    capabilities.apply(item)

    assert item.skip_reasons == []


def test_a_test_needing_an_unknown_capability_is_a_usage_error_naming_the_known_ones(machine):
    with pytest.raises(pytest.UsageError, match=r"unknown capability 'gpu'.*docker_engine"):
        capabilities.apply(FakeItem("gpu"))


def test_a_capability_ci_requires_is_an_error_when_missing_rather_than_a_skip(machine, monkeypatch):
    monkeypatch.setenv("AGENT_ENV_REQUIRE", "docker_engine")

    with pytest.raises(pytest.UsageError, match="'docker_engine' is required here but missing"):
        capabilities.apply(FakeItem("docker_engine"))


def test_the_page_tests_need_chromium_and_say_how_to_get_it_when_it_is_missing(machine):
    item = FakeItem("chromium")

    capabilities.apply(item)

    assert item.skip_reasons == [
        "missing capability: chromium (apt-get install chromium chromium-driver (Debian's), and selenium "
        "(make install))"
    ]

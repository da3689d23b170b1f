"""The one Host and Origin rule: loopback names, IP addresses and allowed hosts; a page's own origin."""

from __future__ import annotations

import pytest

from agent_env._errors import ArgumentError
from agent_env._origins import ALLOWED_HOSTS_VARIABLE, AllowedHosts, binds_loopback, names_loopback


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "localhost:8000",
        "LOCALHOST.",
        "app.localhost:1",
        "127.0.0.1",
        "127.9.9.9:80",
        "[::1]:8000",
    ],
)
def test_loopback_names_and_addresses_name_loopback(host: str) -> None:
    assert names_loopback(host)


@pytest.mark.parametrize(
    "host", ["", "evil.example", "localhost.evil.example", "10.0.0.5", "[::2]:80", "127.0.0.1.nip.io"]
)
def test_other_names_and_addresses_do_not(host: str) -> None:
    assert not names_loopback(host)


def test_a_rebound_name_is_refused_and_the_refusal_says_how_to_allow_it() -> None:
    why = AllowedHosts.of([]).refusal(["evil.example:8000"], [])

    assert why is not None and "'evil.example:8000'" in why and "--allow-host" in why
    assert ALLOWED_HOSTS_VARIABLE in why


@pytest.mark.parametrize("host", ["10.0.0.5:8000", "[fd00::5]:8000", "localhost:8000"])
def test_ip_addresses_and_loopback_names_are_answered_without_being_allowed(host: str) -> None:
    assert AllowedHosts.of([]).refusal([host], []) is None


def test_an_allowed_name_is_answered_and_star_answers_any_host_but_not_any_origin() -> None:
    assert AllowedHosts.of(["Agent-Env.example."]).refusal(["agent-env.example:8000"], []) is None
    anywhere = AllowedHosts.of(["*"])
    assert anywhere.refusal(["whatever.example"], []) is None
    assert anywhere.refusal(["whatever.example"], ["http://evil.example"]) is not None


@pytest.mark.parametrize(
    ("origin", "host", "ours"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1:8000", True),
        ("http://localhost", "localhost:80", True),
        ("https://10.0.0.5", "10.0.0.5:443", True),
        ("http://127.0.0.1:3000", "127.0.0.1:8000", False),
        ("http://evil.example", "127.0.0.1:8000", False),
        ("null", "127.0.0.1:8000", False),
        ("not a url", "127.0.0.1:8000", False),
        ("http://[::1]:8000", "[::1]:8000", True),
    ],
)
def test_an_origin_is_ours_only_when_it_is_the_hosts_own(origin: str, host: str, ours: bool) -> None:
    assert (AllowedHosts.of([]).refusal([host], [origin]) is None) is ours


def test_a_page_of_an_allowed_host_is_ours() -> None:
    assert AllowedHosts.of(["ui.example"]).refusal(["127.0.0.1:8000"], ["https://ui.example"]) is None


def test_the_allowed_hosts_come_from_the_environment_when_none_are_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ALLOWED_HOSTS_VARIABLE, " a.example, ,B.example ")

    assert AllowedHosts.of().names == {"a.example", "b.example"}
    assert AllowedHosts.of([]).names == frozenset()


@pytest.mark.parametrize(
    "bad", ["http://a.example", "a.example:8000", "a.example/path", "*.example", "ünï.example"]
)
def test_an_allowed_host_that_is_not_a_bare_name_is_refused_saying_what_one_is(bad: str) -> None:
    with pytest.raises(ValueError, match=r"bare name.*--allow-host"):
        AllowedHosts.of([bad])


BIND_HOSTS = {
    "127.0.0.1": True,
    "127.0.0.2": True,
    "::1": True,
    "[::1]": True,
    "localhost": True,
    "localhost.": True,
    "LOCALHOST": True,
    "0.0.0.0": False,
    "::": False,
    "[::]": False,
    "192.168.1.7": False,
    "app.localhost": False,
    "agent-env.example": False,
    "": False,
}


@pytest.mark.parametrize(("host", "loopback"), BIND_HOSTS.items())
def test_a_bind_address_is_loopback_by_one_rule_whether_brackets_or_a_final_dot(
    host: str, loopback: bool
) -> None:
    assert binds_loopback(host) is loopback


@pytest.mark.needs("openenv_installed")
def test_serve_and_the_viewer_judge_every_bind_address_by_that_rule(tmp_path) -> None:
    from agent_env.openenv._serve import exposure_warning
    from agent_env.view import ViewServer

    def viewer_refuses(host: str) -> bool:
        try:
            ViewServer(tmp_path, host=host, port=0).stop()
        except ArgumentError:
            return True
        except OSError:  # a loopback name this machine cannot bind (no IPv6): not refused
            return False
        return False

    for host, loopback in BIND_HOSTS.items():
        assert (exposure_warning(host, guarded=True) is None) is loopback, host
        assert viewer_refuses(host) is not loopback, host

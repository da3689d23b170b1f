"""The server's options are defined once (`agent_env._server_options`), and the four entry points agree on
them: `build_app`, `serve`, `AgentEnv.local` and `agent-env serve` each take every option, by the same
name, with the one default, and refuse a name that is none of them, naming the nearest."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import io
from pathlib import Path
from typing import Any

import pytest

from agent_env._error_types import AgentEnvError
from agent_env._server_options import ServeOptions, ServerOptions, doc, from_flags, options_of
from agent_env.cli import _parser
from agent_env.openenv import build_app, serve
from tst.support.wharf import WHARF

pytestmark = pytest.mark.needs("openenv_installed")

SERVER = [option.name for option in dataclasses.fields(ServerOptions)]
SERVE = [option.name for option in dataclasses.fields(ServeOptions)]


def defaults(kind: type[ServerOptions]) -> dict[str, Any]:
    return {option.name: option.default for option in dataclasses.fields(kind)}


def test_no_entry_point_restates_an_option_its_default_or_its_description() -> None:
    assert list(inspect.signature(build_app).parameters) == ["bundle", "options", "given"]
    assert list(inspect.signature(serve).parameters) == ["bundle", "options", "limits", "out", "given"]
    assert set(SERVE) - set(SERVER) == {"host", "port", "insecure_no_token"}


def test_build_app_takes_every_server_option_at_its_default_and_options_alike() -> None:
    app = build_app(WHARF, **defaults(ServerOptions))
    same = build_app(WHARF, ServerOptions(), env_name="quay")

    assert app.state.agent_env.name == "wharf"
    assert same.state.agent_env.name == "quay"


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"recrod": "runs"}, "build_app takes no option 'recrod'; did you mean 'record'? (its options: "),
        ({"host": "0.0.0.0"}, "build_app takes no option 'host': 'host' is where serve() listens"),
        ({"allow_internet": "yes"}, "allow_internet is True or False, got 'yes'"),
        ({"allowed_hosts": "proxy"}, "allowed_hosts is a list of host names, got the string 'proxy': pass"),
    ],
)
def test_build_app_refuses_what_is_no_option_or_no_value_of_one_saying_what_to_pass(
    given: dict[str, Any], said: str
) -> None:
    with pytest.raises(AgentEnvError) as refused:
        build_app(Path("no-such-bundle"), **given)  # refused before the bundle is read

    assert said in str(refused.value)


def test_serve_takes_every_serve_option_at_its_default_and_hands_the_server_s_to_build_app(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = importlib.import_module("agent_env.openenv._serve")
    built: list[ServerOptions] = []
    real = module.build_app

    def recording(bundle: Any, options: ServerOptions | None = None, **given: Any) -> Any:
        built.append(options_of(ServerOptions, given, base=options, caller="build_app"))
        return real(bundle, options, **given)

    class NotRun:
        def __init__(self, config: Any) -> None:
            pass

        def run(self, sockets: Any) -> None:
            for listener in sockets:
                listener.close()

    monkeypatch.setattr(module, "build_app", recording)
    monkeypatch.setattr(module.uvicorn, "Server", NotRun)
    monkeypatch.delenv("MAX_CONCURRENT_ENVS", raising=False)
    out = io.StringIO()

    serve(WHARF, out=out, **{**defaults(ServeOptions), "port": 0, "record_max_mb": 5.0})

    assert out.getvalue().startswith("agent-env: serving wharf")
    assert built == [ServerOptions(max_concurrent_envs=64, record_max_mb=5.0)]


def serve_parser() -> argparse.ArgumentParser:
    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = commands.choices["serve"]
    return found


def test_agent_env_serve_s_flags_are_the_serve_options_with_their_defaults_and_descriptions() -> None:
    parser = serve_parser()
    flags = {action.dest: action for action in parser._actions if action.option_strings}

    assert set(SERVE) <= set(flags)
    for name in SERVE:
        if name == "token":  # --token or --token-file, read by cli/_token.py
            assert flags[name].default is None
            assert flags[name].help.startswith(doc(ServeOptions, "token"))
            continue
        assert flags[name].default == defaults(ServeOptions)[name], name
        assert flags[name].help == doc(ServeOptions, name), name
    assert from_flags(ServeOptions, parser.parse_args([str(WHARF)])) == ServeOptions()


def test_agent_env_serve_s_flags_set_the_options_of_the_same_names() -> None:
    parser = serve_parser()
    argv = [str(WHARF), "--max-concurrent-envs", "3", "--allow-host", "a", "--allow-host", "b"]
    argv += ["--record", "runs", "--record-max-mb", "5", "--env-name", "quay", "--port", "0"]
    argv += ["--allow-internet", "--skip-broken-tasks", "--judge-model", "m", "--insecure-no-token"]

    chosen = from_flags(ServeOptions, parser.parse_args(argv), token="t")

    assert chosen == ServeOptions(
        max_concurrent_envs=3,
        allowed_hosts=("a", "b"),
        record="runs",
        record_max_mb=5.0,
        env_name="quay",
        port=0,
        allow_internet=True,
        skip_broken_tasks=True,
        judge_model="m",
        insecure_no_token=True,
        token="t",
    )

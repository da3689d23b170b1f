"""`AgentEnv.local` takes the server's options as `build_app` does (their one definition,
`agent_env._server_options`) and AgentEnv's own beside them, restating neither; a keyword that is
neither is refused, naming the nearest, before anything is built."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

import agent_env.openenv
from agent_env._error_types import AgentEnvError
from agent_env._server_options import ServerOptions
from agent_env.training.trl import AgentEnv
from agent_env.training.trl._local import local_app
from tst.support.wharf import WHARF

pytestmark = pytest.mark.needs("trl_installed")

SERVER = {option.name: option.default for option in dataclasses.fields(ServerOptions)}
MINE = [name for name in inspect.signature(AgentEnv.__init__).parameters if name not in ("self", "url")]


def test_local_restates_no_option_of_the_server_and_shares_only_the_token_with_agent_env() -> None:
    assert list(inspect.signature(AgentEnv.local).parameters) == ["bundle", "options", "given"]
    assert set(MINE) & set(SERVER) == {"token"}


def test_local_hands_every_server_option_to_build_app_and_keeps_agent_env_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[tuple[Any, ServerOptions]] = []

    def recording(bundle: Any, options: ServerOptions) -> str:
        built.append((bundle, options))
        return "app"

    monkeypatch.setattr(agent_env.openenv, "build_app", recording)

    app, chosen, left = local_app(WHARF, None, {**SERVER, "record_max_mb": 5.0, "reset_timeout_s": 9.0}, MINE)

    assert (app, chosen, left) == ("app", ServerOptions(record_max_mb=5.0), {"reset_timeout_s": 9.0})
    assert built == [(WHARF, ServerOptions(record_max_mb=5.0))]
    _, over, _ = local_app(WHARF, ServerOptions(warm=2, token="t"), {"warm": 3}, MINE)
    assert over == ServerOptions(warm=3, token="t")


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (
            {"recrod": "runs"},
            "no option 'recrod'; did you mean 'record'? (its options: ",
        ),
        (
            {"reset_timout_s": 9},
            "no option 'reset_timout_s'; did you mean 'reset_timeout_s'?",
        ),
        ({"port": 8000}, "AgentEnv.local takes no option 'port': 'port' is where serve() listens"),
    ],
)
def test_local_refuses_a_keyword_neither_the_server_nor_agent_env_takes_before_building_anything(
    given: dict[str, Any], said: str
) -> None:
    with pytest.raises(AgentEnvError) as refused:
        AgentEnv.local("no-such-bundle", **given)

    assert said in str(refused.value)

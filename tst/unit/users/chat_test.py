"""A chat model plays the user: it gets the persona and the conversation the other way round (its
messages are the user's, the agent's replies what it answers, the tool calls unseen), and its answer
opens the next turn, or, `STOP`, ends the task. An endpoint that fails ends the episode, saying why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_env import EpisodeError, ErrorCode, TurnResult
from agent_env.users import STOP
from agent_env.users._chat import INSTRUCTIONS
from tst.support.bundles import a_task, make_bundle
from tst.support.user_model_stand_in import API_KEY, MODEL, UserModelStandIn
from tst.unit.users._play import played

pytestmark = pytest.mark.needs("users_installed")

PERSONA = "You are Ada, a reader who wants Dune shelved."


def bookish(messages: list[dict[str, str]]) -> str:
    """The user model's answer: it asks for Dune when asked which book, and stops once it is shelved."""
    last = messages[-1]["content"].lower()
    if "shelved" in last:
        return f"Thanks! {STOP}"
    if "which" in last:
        return "Dune, please."
    return "Hello? I would like a book shelved."


def model_bundle(root: Path, url: str, **user: Any) -> Path:
    settings = {"model_url": url, "model": MODEL, "persona": PERSONA, "api_key_env": "USER_MODEL_KEY", **user}
    task = a_task(turns=["I would like a book shelved."], user=settings)
    return make_bundle(root, tasks={"train": [task]})


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER_MODEL_KEY", API_KEY)


def test_the_model_s_answer_opens_the_next_turn_and_its_stop_ends_the_task_which_is_scored(serve, tmp_path):
    model = UserModelStandIn(bookish)
    root = model_bundle(tmp_path, f"{serve(model.app).url}/v1")

    _, ends = played(root, [([], "Which book would you like?"), (["Dune"], "Dune is shelved.")])

    assert ends[0] == TurnResult(done=False, turn=2, prompt="Dune, please.")
    assert ends[1].done and ends[1].score == 1.0


def test_the_model_sees_the_persona_and_the_conversation_the_other_way_round_without_tool_calls(
    serve, tmp_path
):
    model = UserModelStandIn(bookish)
    root = model_bundle(tmp_path, f"{serve(model.app).url}/v1")

    played(root, [([], "Which book would you like?"), (["Dune"], "Dune is shelved.")])

    assert model.requests[-1] == [
        {"role": "system", "content": f"{PERSONA}\n\n{INSTRUCTIONS}"},
        {"role": "assistant", "content": "I would like a book shelved."},
        {"role": "user", "content": "Which book would you like?"},
        {"role": "assistant", "content": "Dune, please."},
        {"role": "user", "content": "Dune is shelved."},
    ]


def test_an_endpoint_that_refuses_the_key_ends_the_episode_saying_which_setting_to_fix(
    serve, tmp_path, monkeypatch
):
    monkeypatch.setenv("USER_MODEL_KEY", "sk-wrong")
    root = model_bundle(tmp_path, f"{serve(UserModelStandIn(bookish).app).url}/v1")

    with pytest.raises(EpisodeError) as caught:
        played(root, [([], "Which book?")])

    assert caught.value.code == ErrorCode.USER_FAILED
    assert f"user model '{MODEL}'" in caught.value.message
    assert "refused the API key (401): set the variable the user's api_key_env names" in caught.value.message


def test_an_endpoint_nobody_answers_at_ends_the_episode_saying_so(serve, tmp_path):
    server = serve(UserModelStandIn(bookish).app)
    url = f"{server.url}/v1"
    server.stop()
    root = model_bundle(tmp_path, url, max_retries=0)

    with pytest.raises(EpisodeError) as caught:
        played(root, [([], "Which book?")])

    assert caught.value.code == ErrorCode.USER_FAILED
    assert f"no model server answers at {url}" in caught.value.message

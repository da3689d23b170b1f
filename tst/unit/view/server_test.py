"""The viewer's JSON API, asked over HTTP of a real server on 127.0.0.1, over trajectory files as a
recorder writes them: the table filters, one episode whole, skipped lines counted, new lines seen,
files that are not regular or are links left unread, and a burst of requests all answered."""

from __future__ import annotations

import json
import math
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env import TrajectoryRecorder
from agent_env.testing import FakeTask
from agent_env.view import ViewServer
from tst.support.tools import add_crate, jam_crane
from tst.support.trajectories import fifo, played, write_folder


def get(url: str, *, host: str | None = None, timeout_s: float = 10) -> tuple[int, Any]:
    """The status and the JSON body, parsed as strictly as a browser's `JSON.parse`: no `Infinity`, no
    `NaN`."""
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            return answer.status, strict_json(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, strict_json(error.read())


def strict_json(body: bytes) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON: a browser refuses the whole answer")

    return json.loads(body, parse_constant=refuse)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    stored = played(
        FakeTask("store-crate", tools=[add_crate], system_prompt="Be brief."),
        ("call", "add_crate", {"crate": "C1", "bay": 2}),
        ("call", "no_such_tool", {}),
        ("end", "Stored C1."),
        client="run-7",
    )
    jammed = played(
        FakeTask("lift-crate", tools=[jam_crane], score=0.25),
        ("call", "jam_crane", {"crate": "C9"}),
        ("end", "It jammed."),
        split="eval",
        index=3,
    )
    left = played(FakeTask("left-open", tools=[add_crate]), ("call", "add_crate", {"crate": "C2", "bay": 1}))
    recorder = TrajectoryRecorder(tmp_path / "runs")
    for trajectory in (stored, jammed, left):
        recorder.record(trajectory)
    recorder.close()
    return tmp_path / "runs"


@pytest.fixture
def view(folder: Path) -> Iterator[ViewServer]:
    with ViewServer(folder) as server:
        yield server


def tasks(view: ViewServer, query: str = "") -> list[str]:
    status, listing = get(f"{view.url}api/episodes{query}")
    assert status == 200, listing
    return sorted(row["task"] for row in listing["episodes"])


def test_the_list_has_a_row_per_episode_with_its_task_outcome_score_and_calls(view: ViewServer) -> None:
    status, listing = get(f"{view.url}api/episodes")

    rows = {row["task"]: row for row in listing["episodes"]}
    assert status == 200 and listing["total"] == 3 and set(rows) == {"store-crate", "lift-crate", "left-open"}
    stored = rows["store-crate"]
    assert (stored["split"], stored["index"], stored["toolset"], stored["client"]) == (
        "train",
        0,
        "fake",
        "run-7",
    )
    assert (stored["outcome"], stored["score"], stored["tool_calls"], stored["failures"]) == (
        "scored",
        1.0,
        2,
        1,
    )
    assert (rows["lift-crate"]["split"], rows["lift-crate"]["index"], rows["lift-crate"]["score"]) == (
        "eval",
        3,
        0.25,
    )
    assert (rows["left-open"]["outcome"], rows["left-open"]["score"]) == ("abandoned", None)
    assert listing["choices"]["split"] == ["eval", "train"]
    assert listing["skipped"] == {"count": 0, "lines": []}


def test_the_list_filters_by_split_task_toolset_outcome_and_min_score(view: ViewServer) -> None:
    assert tasks(view, "?split=eval") == ["lift-crate"]
    assert tasks(view, "?task=CRATE") == ["lift-crate", "store-crate"]
    assert tasks(view, "?toolset=fake&outcome=abandoned") == ["left-open"]
    assert tasks(view, "?min_score=0.25") == ["lift-crate", "store-crate"]
    assert tasks(view, "?min_score=0.5") == ["store-crate"]
    assert tasks(view, "?split=train&min_score=") == ["left-open", "store-crate"]
    assert tasks(view, "?toolset=dock") == []


def test_a_filter_it_cannot_apply_is_a_400_that_says_what_it_takes(view: ViewServer) -> None:
    assert get(f"{view.url}api/episodes?min_score=high") == (
        400,
        {"error": "min_score takes a number, such as 0.5; got 'high'"},
    )
    assert get(f"{view.url}api/episodes?outcome=won")[1]["error"] == (
        "outcome 'won' is not one of scored, failed, abandoned, error"
    )
    assert get(f"{view.url}api/episodes?splitt=eval")[1]["error"].startswith("unknown filter 'splitt'")


def test_one_episode_is_its_whole_trajectory_with_calls_errors_replies_verifiers_and_timings(
    view: ViewServer,
) -> None:
    _, listing = get(f"{view.url}api/episodes?task=store")
    wanted = listing["episodes"][0]["id"]

    status, answer = get(f"{view.url}api/episodes/{wanted}")

    trajectory = answer["trajectory"]
    assert status == 200 and trajectory["id"] == wanted and answer["failures"] == 1
    assert trajectory["system_prompt"] == "Be brief."
    (turn,) = trajectory["turns"]
    assert (turn["prompt"], turn["reply"]) == ("Do the task.", "Stored C1.")
    first, unknown = turn["calls"]
    assert (first["tool"], first["arguments"], first["error_code"]) == (
        "add_crate",
        {"crate": "C1", "bay": 2},
        None,
    )
    assert first["result"] == "stored dry crate C1 in bay 2"
    assert (unknown["tool"], unknown["error_code"], unknown["result"]) == (
        "no_such_tool",
        "UNKNOWN_TOOL",
        None,
    )
    assert trajectory["verifiers"] == [{"type": "function", "name": "score", "weight": 1.0, "score": 1.0}]
    assert trajectory["timings"]["total_s"] is not None


def test_an_unknown_episode_is_a_404_naming_it_and_the_folder(view: ViewServer, folder: Path) -> None:
    assert get(f"{view.url}api/episodes/nope") == (404, {"error": f"no episode 'nope' in {folder}"})


def test_lines_that_are_not_trajectories_are_skipped_and_counted_with_their_file_and_line(
    view: ViewServer, folder: Path
) -> None:
    (folder / "broken.jsonl").write_text('not json\n{"schema_version": 1}\n\n')

    _, listing = get(f"{view.url}api/episodes")

    assert listing["total"] == 3 and listing["skipped"]["count"] == 2
    assert [(s["file"], s["line"]) for s in listing["skipped"]["lines"]] == [
        ("broken.jsonl", 1),
        ("broken.jsonl", 2),
    ]
    assert "field 'recorded_by' is required" in listing["skipped"]["lines"][1]["why"]


def test_numbers_a_file_holds_that_json_cannot_are_answered_as_their_words_and_every_episode_is_listed(
    view: ViewServer, folder: Path
) -> None:
    line = played(
        FakeTask("overflow", tools=[add_crate]),
        ("call", "add_crate", {"crate": "C3", "bay": 1}),
        ("end", "Done."),
    ).model_dump(mode="json")
    line["score"] = math.inf
    line["verifiers"][0].update(score=math.nan, components={"reward": -math.inf, "style": 0.5})
    line["timings"]["total_s"] = math.nan
    line["turns"][0]["calls"][0]["arguments"]["bay"] = -math.inf
    (folder / "odd.jsonl").write_text(json.dumps(line) + "\n")  # as Python writes them: Infinity, NaN

    status, listing = get(f"{view.url}api/episodes")
    _, episode = get(f"{view.url}api/episodes/{line['id']}")

    assert status == 200 and listing["total"] == 4
    assert sorted(row["task"] for row in listing["episodes"]) == [
        "left-open",
        "lift-crate",
        "overflow",
        "store-crate",
    ]
    [row] = [row for row in listing["episodes"] if row["task"] == "overflow"]
    assert (row["score"], row["total_s"]) == ("Infinity", "NaN")
    trajectory = episode["trajectory"]
    assert trajectory["score"] == "Infinity" and trajectory["timings"]["total_s"] == "NaN"
    assert trajectory["verifiers"] == [
        {
            "type": "function",
            "name": "score",
            "weight": 1.0,
            "score": "NaN",
            "components": {"reward": "-Infinity", "style": 0.5},
        }
    ]
    assert trajectory["turns"][0]["calls"][0]["arguments"] == {"crate": "C3", "bay": "-Infinity"}


def test_a_fifo_in_the_folder_is_listed_as_skipped_at_once_and_once_removed_the_list_answers_without_it(
    view: ViewServer, folder: Path
) -> None:
    with fifo(folder / "pipe.jsonl") as pipe:
        status, listing = get(f"{view.url}api/episodes", timeout_s=5)
        pipe.unlink()
        after = get(f"{view.url}api/episodes", timeout_s=5)

    assert (status, listing["total"]) == (200, 3)
    assert listing["skipped"]["lines"] == [
        {"file": "pipe.jsonl", "line": 0, "why": "not a regular file (a FIFO): not read"}
    ]
    assert (after[0], after[1]["total"], after[1]["skipped"]["count"]) == (200, 3, 0)


def test_a_link_out_of_the_folder_is_not_read_and_is_listed_as_skipped(
    view: ViewServer, folder: Path, tmp_path: Path
) -> None:
    elsewhere = write_folder(
        tmp_path / "elsewhere", [played(FakeTask("secret", tools=[add_crate]), ("end", "done"))]
    )
    (folder / "secret.jsonl").symlink_to(elsewhere / "run.jsonl")
    (folder / "passwd.jsonl").symlink_to("/etc/passwd")

    _, listing = get(f"{view.url}api/episodes")

    assert listing["total"] == 3 and "secret" not in listing["choices"]["task"]
    assert listing["skipped"]["lines"] == [
        {
            "file": "passwd.jsonl",
            "line": 0,
            "why": "a symbolic link (to /etc/passwd): links are not followed",
        },
        {
            "file": "secret.jsonl",
            "line": 0,
            "why": f"a symbolic link (to {elsewhere / 'run.jsonl'}): links are not followed",
        },
    ]


def test_200_requests_at_once_are_all_answered(view: ViewServer) -> None:
    """Each within 5 s: past a listen backlog's room, a connection waits for its SYN to be sent again
    (1 s, 3 s, 7 s ... later) or times out."""
    clients = 200
    start = threading.Barrier(clients)
    answered: list[int] = []

    def ask() -> None:
        start.wait(timeout=30)
        try:
            answered.append(get(f"{view.url}api/episodes", timeout_s=5)[0])
        except OSError:  # timed out, or refused
            answered.append(-1)

    threads = [threading.Thread(target=ask, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(answered) == [200] * clients, f"{answered.count(-1)} of {clients} unanswered"


def test_lines_written_after_the_server_started_show_up_at_the_next_list(
    view: ViewServer, folder: Path
) -> None:
    assert len(tasks(view)) == 3

    write_folder(folder, [played(FakeTask("late", tools=[add_crate]), ("end", "done"))], name="later.jsonl")

    assert tasks(view) == ["late", "left-open", "lift-crate", "store-crate"]


def test_the_page_and_its_script_and_style_are_served_from_the_package(view: ViewServer) -> None:
    for path, kind in (("", "text/html"), ("view.js", "text/javascript"), ("view.css", "text/css")):
        with urllib.request.urlopen(f"{view.url}{path}", timeout=10) as answer:
            body = answer.read().decode()
            assert answer.headers["Content-Type"].startswith(kind)
            assert "default-src 'self'" in answer.headers["Content-Security-Policy"]
        assert "http://" not in body and "https://" not in body, (
            f"{path or 'the page'} fetches from elsewhere"
        )


def test_a_request_addressed_to_another_host_is_refused_on_loopback(view: ViewServer) -> None:
    status, answer = get(f"{view.url}api/episodes", host="rebound.example:80")

    assert (status, answer["error"]) == (403, "this viewer answers only requests to a loopback address")


def test_a_non_loopback_host_is_refused_unless_asked_for_explicitly(folder: Path) -> None:
    with pytest.raises(ValueError, match=r"192\.0\.2\.1 is not a loopback address.*remote=True"):
        ViewServer(folder, host="192.0.2.1")


def test_the_viewer_names_a_function_verifier_by_its_function_not_as_function(tmp_path: Path) -> None:
    import asyncio

    from agent_env import Episode, load_bundle
    from agent_env._episode_trajectory import trajectory_of
    from tst.support.bundles import a_task, make_bundle

    root = make_bundle(
        tmp_path / "b",
        tasks={"train": [a_task(verifiers=[{"type": "function", "function": "check_answer"}])]},
        verifiers="def check_answer(context):\n    return 1.0\n",
    )
    episode = Episode(load_bundle(root).task("train", 0))

    async def play() -> None:
        await episode.deploy()
        await episode.end_turn("Done.")
        await episode.teardown()

    asyncio.run(play())
    folder = write_folder(tmp_path / "runs", [trajectory_of(episode)])

    with ViewServer(folder) as view:
        _, listing = get(f"{view.url}api/episodes")
        _, answer = get(f"{view.url}api/episodes/{listing['episodes'][0]['id']}")
        with urllib.request.urlopen(f"{view.url}view.js", timeout=10) as script:
            shown = script.read().decode()

    assert answer["trajectory"]["verifiers"] == [
        {"type": "function", "name": "check_answer", "weight": 1.0, "score": 1.0}
    ]
    assert 'el("td", { text: v.name || v.type })' in shown and "`${v.name || v.type} said`" in shown

"""The viewer's page in a real browser (headless Chromium, through chromedriver): it lists a known
trajectory, a filter narrows the table, and an episode shows its calls, an error marked, and its
verifiers' scores. With AGENT_ENV_VIEWER_SCREENSHOT set, the episode's view is saved there
(`make viewer-screenshot` writes docs/viewer.png)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env.testing import FakeTask
from agent_env.view import ViewServer
from tst.support.browser import headless_chromium, wait_for
from tst.support.tools import add_crate, jam_crane, list_crates
from tst.support.trajectories import played, write_folder

pytestmark = pytest.mark.needs("dev_installed", "chromium")


@pytest.fixture
def view(tmp_path: Path) -> Iterator[ViewServer]:
    dock = FakeTask(
        "store-then-lift",
        tools=[add_crate, list_crates, jam_crane],
        turns=("A dry crate C7 is on the quay. Store it in bay 2.", "Now lift C7 onto the ship."),
        system_prompt="You run the dock. Use the tools, then reply in one sentence.",
        score=0.5,
    )
    trajectories = [
        played(
            dock,
            ("call", "add_crate", {"crate": "C7", "bay": 2}),
            ("call", "list_crates", {}),
            ("end", "C7 is stored in bay 2."),
            ("call", "jam_crane", {"crate": "C7"}),
            ("end", "The crane jammed; C7 is still in bay 2."),
            split="eval",
            index=4,
            client="grpo-run-12",
        ),
        played(
            FakeTask("count-crates", tools=[list_crates]), ("call", "list_crates", {}), ("end", "One crate.")
        ),
        played(FakeTask("store-crate", tools=[add_crate], score=0.0), ("end", "Done."), index=1),
    ]
    write_folder(tmp_path, trajectories)
    with ViewServer(tmp_path) as server:
        yield server


@pytest.fixture
def browser() -> Iterator[Any]:
    with headless_chromium() as driver:
        yield driver


def texts(browser: Any, selector: str) -> list[str]:
    """The shown text of every element `selector` finds, read at one moment (the table re-renders)."""
    script = "return [...document.querySelectorAll(arguments[0])].map((e) => e.innerText)"
    return list(browser.execute_script(script, selector))


def table_tasks(browser: Any) -> list[str]:
    return texts(browser, "#episodes tbody tr td:first-child")


def test_the_page_lists_every_episode_and_a_filter_narrows_the_table(view: ViewServer, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(view.url)
    wait_for(browser, lambda b: len(table_tasks(b)) == 3)
    assert sorted(table_tasks(browser)) == ["count-crates", "store-crate", "store-then-lift"]
    assert "3 of 3 episodes" in browser.find_element(By.ID, "count").text

    Select(browser.find_element(By.CSS_SELECTOR, "#filters [name=split]")).select_by_visible_text("eval")
    wait_for(browser, lambda b: table_tasks(b) == ["store-then-lift"])
    cells = texts(browser, "#episodes tbody tr td")
    assert cells[:7] == ["store-then-lift", "eval/4", "fake", "scored", "0.50", "3", "1"]
    assert cells[7] == "grpo-run-12"

    Select(browser.find_element(By.CSS_SELECTOR, "#filters [name=split]")).select_by_visible_text("any")
    browser.find_element(By.CSS_SELECTOR, "#filters [name=min_score]").send_keys("0.6")
    wait_for(browser, lambda b: table_tasks(b) == ["count-crates"])


def test_a_file_left_unread_is_named_at_the_top_with_why_and_its_lines_never_shown(
    view: ViewServer, browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from selenium.webdriver.common.by import By

    elsewhere = write_folder(
        tmp_path_factory.mktemp("elsewhere"),
        [played(FakeTask("secret", tools=[add_crate]), ("end", "done"))],
    )
    view.folder.path.joinpath("secret.jsonl").symlink_to(elsewhere / "run.jsonl")

    browser.get(view.url)
    wait_for(browser, lambda b: b.find_element(By.ID, "skipped").is_displayed())
    browser.find_element(By.CSS_SELECTOR, "#skipped-lines summary").click()

    assert browser.find_element(By.ID, "skipped").text == "1 skipped (not trajectories)"
    assert texts(browser, "#skipped-lines li") == [
        f"secret.jsonl: a symbolic link (to {elsewhere / 'run.jsonl'}): links are not followed"
    ]
    assert sorted(table_tasks(browser)) == ["count-crates", "store-crate", "store-then-lift"]


def test_an_episode_whose_score_is_infinity_is_listed_with_the_others_and_shows_it(
    view: ViewServer, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    line = played(FakeTask("overflow", tools=[add_crate]), ("end", "Done.")).model_dump(mode="json")
    line["score"] = math.inf
    line["verifiers"][0]["score"] = math.nan
    (view.folder.path / "odd.jsonl").write_text(json.dumps(line) + "\n")  # Infinity, NaN: as Python writes

    browser.get(view.url)
    wait_for(browser, lambda b: len(table_tasks(b)) == 4)
    [row] = [r for r in browser.find_elements(By.CSS_SELECTOR, "#episodes tbody tr") if "overflow" in r.text]
    assert row.find_element(By.CSS_SELECTOR, ".score").text == "Infinity"
    row.find_element(By.LINK_TEXT, "overflow").click()
    wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#episode-view .episode-score"))

    page = browser.find_element(By.ID, "episode-view")
    assert page.find_element(By.CSS_SELECTOR, ".episode-score").text == "Infinity"
    assert page.find_element(By.CSS_SELECTOR, ".verifier-score").text == "NaN"


def test_an_episode_shows_its_conversation_calls_with_an_error_marked_and_its_verifier_scores(
    view: ViewServer, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(view.url)
    wait_for(browser, lambda b: "store-then-lift" in table_tasks(b))
    browser.find_element(By.LINK_TEXT, "store-then-lift").click()
    wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#episode-view table.verifiers"))

    page = browser.find_element(By.ID, "episode-view")
    calls = page.find_elements(By.CSS_SELECTOR, ".call")
    failed = page.find_elements(By.CSS_SELECTOR, ".call.failed")
    assert "You run the dock. Use the tools, then reply in one sentence." in page.text
    assert "A dry crate C7 is on the quay. Store it in bay 2." in page.text
    assert [c.find_element(By.CSS_SELECTOR, ".tool").text for c in calls] == [
        "add_crate",
        "list_crates",
        "jam_crane",
    ]
    assert '"crate": "C7"' in calls[0].text and "stored dry crate C7 in bay 2" in calls[0].text
    assert len(failed) == 1 and "jam_crane" in failed[0].text
    assert "✗ error" in failed[0].find_element(By.CSS_SELECTOR, ".error-mark").text
    assert "the crane is jammed with C7 half lifted" in failed[0].text
    assert failed[0].value_of_css_property("background-color") != calls[0].value_of_css_property(
        "background-color"
    )
    assert "The crane jammed; C7 is still in bay 2." in page.text
    verifier = page.find_element(By.CSS_SELECTOR, "tr.verifier").text.split()
    assert verifier == ["score", "1", "0.50"]
    assert page.find_element(By.CSS_SELECTOR, ".episode-score").text == "0.50"
    assert "total" in page.find_element(By.CSS_SELECTOR, ".timings").text

    if shot := os.environ.get("AGENT_ENV_VIEWER_SCREENSHOT"):
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(1280, min(int(height) + 200, 3000))
        assert browser.save_screenshot(str(Path(shot).resolve()))


def test_an_eval_episode_s_normal_end_is_not_an_error_its_simulated_turn_is_marked_and_untimed_phases_say_so(
    tmp_path: Path, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    from agent_env import OutcomeRecord, TaskRef, Timings, Trajectory, TurnRecord
    from agent_env.training.trl import TASK_OVER

    evaluated = Trajectory(
        recorded_by="eval",
        model="tiny",
        task=TaskRef(split="eval", index=0, id="lend-a-book", toolset="catalog"),
        turns=[
            TurnRecord(turn=1, prompt="I would like a book.", reply="Which one?"),
            TurnRecord(turn=2, prompt="Dune, please.", prompt_by="simulated user", reply="Lent."),
        ],
        score=1.0,
        outcome=OutcomeRecord(kind="scored", reason=TASK_OVER),
        timings=Timings(deploy_s=0.25, total_s=1.5),
    )
    write_folder(tmp_path, [evaluated])
    with ViewServer(tmp_path) as view:
        browser.get(f"{view.url}#/episode/{evaluated.id}")
        wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#episode-view .timings"))
        page = browser.find_element(By.ID, "episode-view")

        reason = page.find_element(By.CSS_SELECTOR, ".reason")
        who = [
            m.find_element(By.CSS_SELECTOR, ".who").text for m in page.find_elements(By.CSS_SELECTOR, ".user")
        ]
        timing = page.find_element(By.CSS_SELECTOR, ".timings").text

        assert reason.text == TASK_OVER
        assert reason.value_of_css_property("color") == page.value_of_css_property("color")
        assert who == ["user", "user (simulated)"]
        assert "deploy 0.250 s" in timing and "verify not measured by eval" in timing
        assert "teardown not measured by eval" in timing and "total 1.500 s" in timing


def test_an_episode_shows_what_each_verifier_said_below_its_score_as_text(
    tmp_path: Path, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    from agent_env import OutcomeRecord, TaskRef, Trajectory, TurnRecord, VerifierRecord

    said = "curl: (6) Could not resolve host: astral.sh\n<b>uvx</b>: command not found"
    scored = Trajectory(
        recorded_by="server",
        task=TaskRef(split="train", index=0, id="fetch-uv", toolset="harbor"),
        turns=[TurnRecord(turn=1, prompt="Say hello.", reply="")],
        verifiers=[
            VerifierRecord(type="test_script", weight=1.0, score=0.0, detail=said),
            VerifierRecord(type="bash", weight=1.0, score=1.0),
        ],
        score=0.5,
        outcome=OutcomeRecord(kind="scored"),
    )
    write_folder(tmp_path, [scored])
    with ViewServer(tmp_path) as view:
        browser.get(f"{view.url}#/episode/{scored.id}")
        wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#episode-view table.verifiers"))
        rows = browser.find_elements(By.CSS_SELECTOR, "table.verifiers tbody tr")

        assert [row.get_attribute("class") for row in rows] == ["verifier", "verifier-said", "verifier"]
        assert rows[0].text.split() == ["test_script", "1", "0.00"]
        assert rows[1].find_element(By.CSS_SELECTOR, ".who").text == "test_script said"
        assert rows[1].find_element(By.CSS_SELECTOR, "pre.verifier-detail").text == said
        assert rows[1].find_elements(By.TAG_NAME, "b") == []
        assert rows[2].text.split() == ["bash", "1", "1.00"]

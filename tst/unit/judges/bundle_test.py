"""A bundle's judges at load: `[judges.NAME]` shared by the tasks that name it, a task's fields over
it, every rubric file read by the folder's one rule; each thing missing or wrong a problem saying
where and how to fix it; and without the judge extra, a problem naming its install line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_env import BundleError, load_bundle
from agent_env._contracts.judges import READS
from agent_env.judges import Judge, JudgeScale
from tst.support.bundles import a_task, make_bundle

pytestmark = pytest.mark.needs("judge_installed")  # a bundle with a judge loads only with the extra

INSTALL = "pip install 'agentenv-framework[judge]'"
TOML = """
[agents.reader]
envs = ["shelf"]

[judges.tone]
url = "https://judge.example/v1"
model = "judge-1"
api_key_env = "JUDGE_KEY"
rubric_file = "rubrics/tone.md"
scale = { min = 1, max = 5 }
max_concurrency = 3
"""
SHARED = {"type": "judge", "judge": "tone"}


def bundle(root: Path, *verifiers: dict, toml: str = TOML, rubric: str | None = "Be polite.\n") -> Path:
    files = {"rubrics/tone.md": rubric} if rubric is not None else {}
    tasks = [a_task(id=f"t{n}", verifiers=[v]) for n, v in enumerate(verifiers)]
    return make_bundle(root, toml=toml, tasks={"train": tasks}, files=files)


def problems_of(root: Path) -> list[str]:
    with pytest.raises(BundleError) as caught:
        load_bundle(root)
    return [str(p) for p in caught.value.problems]


def test_tasks_that_name_a_shared_judge_ask_it_once_with_its_rubric_file_read(tmp_path: Path):
    loaded = load_bundle(bundle(tmp_path, SHARED, SHARED))

    assert loaded.judges == [
        Judge(
            label="judge 'tone'",
            model="judge-1",
            rubric="Be polite.\n",
            url="https://judge.example/v1",
            api_key_env="JUDGE_KEY",
            reads=READS,
            scale=JudgeScale(min=1, max=5),
            max_concurrency=3,
        )
    ]
    assert loaded.task("train", 0).spec.verifiers[0].type == "judge"


def test_a_task_s_fields_override_its_shared_judge_s_one_by_one(tmp_path: Path):
    own = {
        **SHARED,
        "rubric": "Be brief.",
        "model": "judge-2",
        "reads": ["reply"],
        "timeout_s": 5,
        "retries": 0,
    }

    [judge] = load_bundle(bundle(tmp_path, own)).judges

    assert (judge.rubric, judge.model, judge.reads, judge.timeout_s, judge.retries) == (
        "Be brief.",
        "judge-2",
        ("reply",),
        5,
        0,
    )
    assert (judge.url, judge.scale, judge.max_concurrency) == (
        "https://judge.example/v1",
        JudgeScale(min=1, max=5),
        3,
    )


def test_a_task_may_give_its_own_judge_with_no_shared_one(tmp_path: Path):
    own = {"type": "judge", "url": "http://127.0.0.1:9/v1", "model": "m", "rubric": "Be kind.", "weight": 2}

    [judge] = load_bundle(bundle(tmp_path, own)).judges

    assert (judge.label, judge.model, judge.rubric, judge.scale) == (
        "the task's judge",
        "m",
        "Be kind.",
        JudgeScale(),
    )


def test_a_judge_not_defined_is_a_problem_with_the_nearest_name(tmp_path: Path):
    [problem] = problems_of(bundle(tmp_path, {"type": "judge", "judge": "tones"}))

    assert "verifiers[0]: judge 'tones' is not defined in bundle.toml; did you mean 'tone'?" in problem


def test_a_judge_without_a_model_or_a_rubric_is_a_problem_saying_what_to_give(tmp_path: Path):
    problems = problems_of(bundle(tmp_path, {"type": "judge", "url": "http://127.0.0.1:9/v1"}))

    assert any('the judge has no model: give "model"' in p for p in problems)
    assert any('the judge has no rubric: give "rubric" (text) or "rubric_file"' in p for p in problems)


@pytest.mark.parametrize(
    ("field", "said"),
    [
        (
            {"rubric": "x", "rubric_file": "rubrics/tone.md"},
            "give either 'rubric' or 'rubric_file', not both",
        ),
        ({"scale": {"min": 5, "max": 5}}, "the scale's max (5) must be above its min (5)"),
        ({"reads": ["reply", "reply"]}, "'reads' names a part twice"),
        ({"reads": ["thoughts"]}, "thoughts"),
        ({"url": "judge.example"}, "url"),
        ({"api_key": "sk-123"}, "api_key"),
    ],
)
def test_a_judge_verifier_s_malformed_field_is_a_problem(tmp_path: Path, field: dict, said: str):
    problems = problems_of(bundle(tmp_path, {**SHARED, **field}))

    assert any(said in p for p in problems), problems


def test_a_key_written_into_bundle_toml_is_refused_only_its_variable_s_name_is_taken(tmp_path: Path):
    toml = TOML.replace('api_key_env = "JUDGE_KEY"', 'api_key = "sk-live-123"')

    problems = problems_of(bundle(tmp_path, SHARED, toml=toml))

    assert any("judges.tone.api_key" in p for p in problems), problems


def test_a_rubric_file_that_leads_out_of_the_bundle_is_refused_unread(tmp_path: Path):
    outside = tmp_path / "secret.md"
    outside.write_text("the machine's file")
    root = bundle(tmp_path / "b", SHARED, rubric=None)
    (root / "rubrics").mkdir()
    (root / "rubrics" / "tone.md").symlink_to(outside)

    [problem] = problems_of(root)

    assert "rubric_file" in problem and "leads out of the bundle" in problem


@pytest.mark.parametrize(("rubric", "said"), [(None, "is not a file of the bundle"), ("  \n", "is empty")])
def test_a_rubric_file_missing_or_empty_is_a_problem_at_bundle_toml(
    tmp_path: Path, rubric: str | None, said: str
):
    problems = problems_of(bundle(tmp_path, SHARED, rubric=rubric))

    assert any(p.startswith("bundle.toml: judges.tone.rubric_file") and said in p for p in problems), problems


def test_a_rubric_file_bigger_than_a_prompt_may_be_is_refused(tmp_path: Path):
    problems = problems_of(bundle(tmp_path, SHARED, rubric="x" * (2**20 + 1)))

    assert any("over the 1 MiB a prompt may be" in p for p in problems), problems


def test_without_the_judge_extra_a_bundle_with_a_judge_is_refused_naming_its_install_line(tmp_path: Path):
    root = bundle(tmp_path, SHARED)
    code = (
        "import sys\nsys.modules['openai'] = None\n"
        "from agent_env import BundleError, load_bundle\n"
        f"try:\n    load_bundle({json.dumps(str(root))})\nexcept BundleError as error:\n    print(error)\n"
    )

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)

    assert f"a judge verifier needs the judge extra, not installed here: {INSTALL}" in done.stdout
    assert done.stdout.count(INSTALL) == 1  # said once, not once per task


def test_importing_the_judge_s_client_without_the_extra_fails_naming_judge():
    code = (
        "import sys\nsys.modules['openai'] = None\n"
        "try:\n    import agent_env.judges._client\nexcept ImportError as e:\n    print(e)\n"
    )

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)

    assert "a judge verifier needs openai" in done.stdout and INSTALL in done.stdout


def test_loading_and_asking_nothing_imports_no_openai(tmp_path: Path):
    root = bundle(tmp_path, SHARED)
    code = (
        "import sys\nfrom agent_env import load_bundle\n"
        f"load_bundle({json.dumps(str(root))})\nprint('openai' in sys.modules)\n"
    )

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)

    assert done.stdout.strip() == "False", done.stderr

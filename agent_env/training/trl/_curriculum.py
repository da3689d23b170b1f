"""The online curriculum from the trainer's side: rows that let the server choose each group's task.

`AgentEnv.curriculum(split)` makes an `OnlineCurriculum`: a dataset of rows that name no task, only a
slot of the run, and a callback. TRL resets each rollout with its row; a curriculum row's reset asks
the server's curriculum (`agent_env._curriculum`, held by the fleet's first server) for the task of
its GRPO group and returns the task's first message, which TRL appends to the row's prompt (a system
prompt, if the split's tasks have one, and an empty user message): the environment owns the prompt,
and TRL is unchanged. Both trainers reset a group's rollouts one after another (GRPOTrainer's sampler
repeats a row `num_generations` times in a row; AsyncGRPO's worker resets them in order), so the
resets of one slot in a row are one group, with one key: each gets the same task. Each rollout's
score goes back to the curriculum when the trainer takes its reward.

The callback saves the curriculum's state with each checkpoint (`agent_env_curriculum.json`),
restores it when a run resumes from one, and prints the curriculum's table when training ends.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_env._curriculum import Curriculum, CurriculumPolicy
from agent_env._errors import ArgumentError
from agent_env._specs import CurriculumDraw, CurriculumDrawn, CurriculumScore, TaskSpec
from agent_env.client._taskapi import TaskAPI
from agent_env.training.trl._fleet import FleetSettings, resolve
from agent_env.training.trl._selection import read_results

if TYPE_CHECKING:
    from datasets import Dataset

    from agent_env.eval._results import EvalResult

log = logging.getLogger("agent_env.training.trl")

RUN, SLOT, POLICY, SEED = "curriculum_run", "curriculum_slot", "curriculum_policy", "curriculum_seed"
"""The columns of a curriculum row, beside `prompt` and `split`."""
DEFAULT_ROWS = 65536
"""Rows of a curriculum's dataset: slots enough that none repeats within a run of that many groups."""
STATE_FILE = "agent_env_curriculum.json"
"""What a checkpoint keeps of the curriculum, beside the model."""


@dataclass(frozen=True)
class Asked:
    """What a curriculum row asks: the run, its slot, the split, the policy and seed."""

    run: str
    slot: int
    split: str
    policy: dict[str, float]
    seed: int


def asked_by(row: Mapping[str, Any]) -> Asked | None:
    """The curriculum ask of a row; None for a row that names its task."""
    if RUN not in row:
        return None
    try:
        return Asked(
            str(row[RUN]), int(row[SLOT]), str(row["split"]), json.loads(row[POLICY]), int(row[SEED])
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ArgumentError(
            f"a curriculum row needs {RUN}, {SLOT}, {POLICY}, {SEED} and split ({exc}): train on "
            "AgentEnv.curriculum(split).dataset, whose rows carry them"
        ) from None


class _Groups:
    """Which group a curriculum reset belongs to, in this process: the resets of one slot in a row;
    and the task drawn for it, so that only a group's first reset asks the server."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[str, tuple[int, str]] = {}
        self._drawn: dict[str, tuple[str, CurriculumDrawn]] = {}

    def key(self, run: str, slot: int) -> str:
        with self._lock:
            last = self._last.get(run)
            if last is None or last[0] != slot:
                last = self._last[run] = (slot, f"{slot}-{uuid.uuid4().hex[:16]}")
            return last[1]

    def drawn(self, run: str, group: str) -> CurriculumDrawn | None:
        """The task drawn for `group`, if it is the run's latest group and was drawn here."""
        with self._lock:
            held = self._drawn.get(run)
            return held[1] if held is not None and held[0] == group else None

    def keep(self, run: str, group: str, task: CurriculumDrawn) -> None:
        with self._lock:
            self._drawn[run] = (group, task)


_GROUPS = _Groups()
_HOLDERS: dict[tuple[str, str | None], TaskAPI] = {}
_HOLDERS_LOCK = threading.Lock()


def holder_url(fleet: FleetSettings) -> str:
    """The server that holds the run's curriculum: the fleet's first (the lowest address, with DNS
    discovery, so every process picks the same)."""
    if fleet.discover is None:
        return fleet.urls[0]
    return min(resolve(fleet.urls[0]))


def holder(fleet: FleetSettings) -> TaskAPI:
    """This process's Task API client of the curriculum's server."""
    url = holder_url(fleet)
    key = (url, fleet.token_for(url))
    with _HOLDERS_LOCK:
        api = _HOLDERS.get(key)
        if api is None:
            api = _HOLDERS[key] = TaskAPI(url, token=key[1])
        return api


def draw(fleet: FleetSettings, asked: Asked) -> tuple[str, CurriculumDrawn]:
    """The group key of a curriculum reset, and the task drawn for its group: asked of the server at
    the group's first reset (it answers a key's every asking alike, so the later ones need not ask)."""
    group = _GROUPS.key(asked.run, asked.slot)
    task = _GROUPS.drawn(asked.run, group)
    if task is None:
        request = CurriculumDraw(
            run=asked.run, split=asked.split, group=group, policy=asked.policy, seed=asked.seed
        )
        task = holder(fleet).curriculum_draw(request)
        _GROUPS.keep(asked.run, group, task)
    return group, task


def report(fleet: FleetSettings, run: str, split: str, group: str, score: float) -> None:
    """Tell the curriculum a rollout's score; a failure is logged (the run goes on without it)."""
    try:
        holder(fleet).curriculum_score(CurriculumScore(run=run, split=split, group=group, score=score))
    except Exception as exc:
        log.warning("the curriculum was not told a score of group %s: %s", group, exc)


def curriculum_rows(
    tasks: Sequence[TaskSpec], run: str, policy: CurriculumPolicy, seed: int, rows: int
) -> list[dict[str, Any]]:
    """`rows` rows of a run over `tasks` (one split's), which must share their system prompt and
    toolset: the row's prompt is what every task's starts with."""
    if not tasks:
        raise ArgumentError("a curriculum needs a split with tasks")
    systems = {tuple(m["content"] for m in task.prompt[:-1]) for task in tasks}
    toolsets = {task.toolset.name for task in tasks}
    split = tasks[0].split
    if len(systems) > 1 or len(toolsets) > 1:
        raise ArgumentError(
            f"split '{split}' has tasks of {len(systems)} system prompts and {len(toolsets)} toolsets: a "
            "curriculum draws among tasks that share both (TRL shows a row's system prompt and tools before "
            "the task is drawn); make a split for each agent"
        )
    if rows < 1:
        raise ArgumentError(f"rows must be at least 1, got {rows}")
    prompt = [*tasks[0].prompt[:-1], {"role": "user", "content": ""}]
    settings = json.dumps(asdict(policy))
    return [
        {"prompt": prompt, "split": split, RUN: run, SLOT: slot, POLICY: settings, SEED: seed}
        for slot in range(rows)
    ]


class OnlineCurriculum:
    """A run's online curriculum over one split: `dataset` to train on, `callback` to pass the trainer
    (checkpoints keep its state; a resumed run restores it; the end of training prints its table)."""

    def __init__(
        self,
        dataset: Dataset,
        fleet: FleetSettings,
        run: str,
        split: str,
        tasks: Sequence[TaskSpec],
        *,
        policy: CurriculumPolicy,
        seed: int,
    ) -> None:
        self.dataset = dataset
        self.run = run
        self.split = split
        self.policy = policy
        self.seed = seed
        self._fleet = fleet
        self._ids = [task.id for task in tasks]

    def start_from(self, results: EvalResult | str | Path) -> int:
        """Start the curriculum from an evaluation of its split (`agent-env eval --split SPLIT -n K`'s
        results.json, or an `EvalResult`): each task measured counts as one group of its samples, so
        the first draws favour the tasks whose samples differed, as the offline filter would, while
        the rarely solved ones keep a chance. How many tasks it started; call it before training."""
        found = read_results(results)
        if found.split != self.split:
            raise ArgumentError(
                f"the results are of split '{found.split}', the curriculum's is '{self.split}': evaluate "
                f"`--split {self.split}`"
            )
        curriculum = Curriculum(range(len(self._ids)), policy=self.policy, seed=self.seed)
        started = 0
        for task in found.tasks:
            measured = task.index < len(self._ids) and self._ids[task.index] == task.id
            if measured and task.mean_score is not None and task.score_std is not None:
                curriculum.seed_measured(
                    task.index, task.scored, task.mean_score, task.score_std, task.min_score, task.max_score
                )
                started += 1
        self.restore({"splits": {self.split: curriculum.state()}})
        return started

    def state(self) -> dict[str, Any]:
        """The run's curriculum as the server holds it now (JSON data)."""
        return holder(self._fleet).curriculum_state(self.run)

    def restore(self, state: dict[str, Any]) -> None:
        """Set the run's curriculum to a saved state (`state()`'s)."""
        holder(self._fleet).curriculum_restore(self.run, state)

    def table(self, most: int = 20) -> str:
        """The curriculum's state per task, the `most` most drawn first, and how many were played."""
        saved = self.state()["splits"].get(self.split)
        rows = Curriculum.from_state(saved, range(len(self._ids))).table() if saved else []
        played = sum(1 for row in rows if row["draws"])
        lines = [
            f"online curriculum of split '{self.split}': {played} of {len(rows)} tasks drawn",
            f"{'task':<28} {'draws':>5} {'plays':>5} {'mean':>6} {'spread':>6} {'signal':>6} {'last':>5}",
        ]
        for row in rows[:most]:
            if not row["draws"]:
                break
            lines.append(
                f"{self._ids[row['index']][:28]:<28} {row['draws']:>5} {row['plays']:>5} {row['mean']:>6.3f} "
                f"{row['spread']:>6.3f} {row['signal']:>6.3f} {row['last_drawn'] or 0:>5}"
            )
        return "\n".join(lines)

    @property
    def callback(self) -> Any:
        """A `transformers.TrainerCallback` that saves the curriculum with each checkpoint, restores it
        when the run resumes from one, and prints its table at the end."""
        from agent_env.training.trl._curriculum_callback import CurriculumCallback

        return CurriculumCallback(self)

    def save(self, folder: str | Path) -> Path:
        """Write the curriculum's state into `folder` (a checkpoint's); its path."""
        path = Path(folder) / STATE_FILE
        path.write_text(json.dumps(self.state()), encoding="utf-8")
        return path

    def load(self, folder: str | Path) -> bool:
        """Restore the state a checkpoint `folder` keeps; False if it keeps none."""
        path = Path(folder) / STATE_FILE
        if not path.is_file():
            return False
        self.restore(json.loads(path.read_text(encoding="utf-8")))
        return True

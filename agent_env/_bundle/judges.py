"""A bundle's judges: `[judges.NAME]` of bundle.toml and each task's `judge` verifier, merged into the
`Judge` it asks, every rubric file read by the folder's one rule (inside it, a regular file, no bigger
than a prompt may be: a rubric goes to a model as one)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from agent_env._bundle.checks import hint
from agent_env._bundle.folder import PROMPT_CAP, BundleFolder
from agent_env._contracts.judges import (
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
    READS,
    Judge,
    JudgeConfig,
    JudgeFields,
    JudgeScale,
)
from agent_env._extras import install_line, installed
from agent_env._verifiers import JudgeCheck, Verifier, verifier_place


class BundleJudges:
    """The judges a bundle's tasks may name, and the rubric files read so far (each once)."""

    def __init__(self, folder: BundleFolder, shared: Mapping[str, JudgeConfig]) -> None:
        self.folder = folder
        self.shared = dict(shared)
        self._rubrics: dict[str, str | None] = {}
        self._extra_said = False
        for name, judge in self.shared.items():
            if judge.rubric_file is not None:
                self._rubric_file(f"bundle.toml: judges.{name}.rubric_file", judge.rubric_file)
        if self.shared:
            self._needs_extra("bundle.toml: judges")

    def resolved(self, place: str, verifiers: Iterable[Verifier]) -> tuple[Verifier, ...]:
        """A task's verifiers, each `judge` one with the judge it asks (`place` is the task's, as its
        problems name it)."""
        done = []
        relative = []
        for n, verifier in enumerate(verifiers):
            if isinstance(verifier.spec, JudgeCheck):
                judge = self.judge(f"{place}: {verifier_place(n)}", verifier.spec)
                verifier = replace(verifier, judged_by=judge)
                if verifier.judged_by is not None and verifier.judged_by.relative:
                    relative.append(n)
            done.append(verifier)
        if len(relative) > 1:  # a group is judged once per task: one judgement to wait for together
            self.folder.problem(
                f"{place}: {verifier_place(relative[1])}",
                f"a task has at most one relative judge, and {', '.join(map(verifier_place, relative))} are: "
                'give the others "relative": false',
            )
        return tuple(done)

    def judge(self, where: str, spec: JudgeCheck) -> Judge | None:
        """The judge a task's verifier asks: its fields over its shared judge's; None, with a problem
        for each thing missing (a judge not defined, no model, no rubric), when there is none."""
        self._needs_extra(where)
        shared: JudgeConfig | None = None
        if spec.judge is not None:
            shared = self.shared.get(spec.judge)
            if shared is None:
                defined = (
                    f"{hint(spec.judge, self.shared)}"
                    if self.shared
                    else " (bundle.toml defines no [judges])"
                )
                self.folder.problem(where, f"judge '{spec.judge}' is not defined in bundle.toml{defined}")
                return None
        merged = _merged(shared, spec)
        model = merged.model
        said = len(self.folder.problems)
        rubric = self._rubric(where, spec, shared)
        unread = len(self.folder.problems) > said or self._unread(spec, shared)
        if model is None:
            self.folder.problem(
                where,
                'the judge has no model: give "model", or name a [judges.NAME] of bundle.toml that has one',
            )
        if rubric is None and not unread:
            self.folder.problem(
                where,
                'the judge has no rubric: give "rubric" (text) or "rubric_file" (a file of the bundle), '
                "or name a [judges.NAME] of bundle.toml that has one",
            )
        if model is None or rubric is None:
            return None
        return Judge(
            label=f"judge '{spec.judge}'" if spec.judge is not None else "the task's judge",
            model=model,
            rubric=rubric,
            url=merged.url,
            api_key_env=merged.api_key_env,
            reads=merged.reads or READS,
            scale=merged.scale or JudgeScale(),
            timeout_s=merged.timeout_s or DEFAULT_TIMEOUT_S,
            retries=DEFAULT_RETRIES if merged.retries is None else merged.retries,
            max_concurrency=shared.max_concurrency if shared is not None else DEFAULT_MAX_CONCURRENCY,
            temperature=merged.temperature,
            response_format=merged.response_format or "json_schema",
            relative=bool(merged.relative),
        )

    def _unread(self, spec: JudgeCheck, shared: JudgeConfig | None) -> bool:
        """Whether the rubric is the shared judge's file, which could not be read (said at its start)."""
        if spec.rubric is not None or spec.rubric_file is not None or shared is None:
            return False
        return shared.rubric_file is not None and self._rubrics.get(shared.rubric_file) is None

    def _rubric(self, where: str, spec: JudgeCheck, shared: JudgeConfig | None) -> str | None:
        if spec.rubric is not None:
            return spec.rubric
        if spec.rubric_file is not None:
            return self._rubric_file(f"{where}: rubric_file", spec.rubric_file)
        if shared is None:
            return None
        if shared.rubric is not None:
            return shared.rubric
        if shared.rubric_file is not None:
            return self._rubrics.get(shared.rubric_file)  # read at start; its problem said there
        return None

    def _rubric_file(self, where: str, name: str) -> str | None:
        """The rubric file's text, read once by the folder's rule; None (a problem said) if it cannot be."""
        if name in self._rubrics:
            return self._rubrics[name]
        path = self.folder.root / name
        text = None
        if Path(name).is_absolute():
            self.folder.problem(
                where, f"'{name}' is not a path inside the bundle: name the file relative to it"
            )
        elif self.folder.inside(path, where):
            if not path.exists():
                self.folder.problem(where, f"'{name}' is not a file of the bundle")
            else:
                text = self.folder.read_text(path, where, PROMPT_CAP)
                if text is not None and not text.strip():
                    self.folder.problem(where, f"'{name}' is empty: write the rubric in it")
                    text = None
        self._rubrics[name] = text
        return text

    def _needs_extra(self, where: str) -> None:
        if not self._extra_said and not installed("openai"):
            self._extra_said = True
            self.folder.problem(
                where, f"a judge verifier needs the judge extra, not installed here: {install_line('judge')}"
            )


_MERGED = tuple(name for name in JudgeFields.model_fields if name not in ("rubric", "rubric_file"))
"""The fields a task's verifier overrides one by one (the rubric is one thing, text or file)."""


def _merged(shared: JudgeFields | None, spec: JudgeFields) -> JudgeFields:
    """The fields the verifier gives, over those its shared judge gives (both validated already)."""
    values = {}
    for layer in (shared, spec):
        for name in _MERGED:
            if layer is not None and (value := getattr(layer, name)) is not None:
                values[name] = value
    return JudgeFields.model_construct(**values)

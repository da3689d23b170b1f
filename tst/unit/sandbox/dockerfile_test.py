"""The images a Dockerfile builds on, read as Docker's classic builder reads them: what a built
task image is checked against at the next load (a base re-tagged since means a rebuild)."""

from __future__ import annotations

import pytest

from agent_env.sandbox._dockerfile import base_images


def test_a_dockerfile_builds_on_the_image_its_from_names():
    assert base_images("FROM agent-env-sandbox:latest\nRUN echo hi > /x\n") == ("agent-env-sandbox:latest",)


def test_a_multi_stage_dockerfile_builds_on_each_stages_image_and_copies_from_another_but_not_on_its_stages():
    text = """
FROM python:3.12-slim AS build
RUN pip wheel . -w /wheels
FROM build AS test
FROM --platform=linux/amd64 debian:bookworm-slim
COPY --from=build /wheels /wheels
COPY --from=0 /etc/os-release /tmp/
COPY --chown=0:0 --from=busybox:1.36 /bin/busybox /bin/
FROM scratch
COPY --from=BUILD /wheels /
"""

    assert base_images(text) == ("python:3.12-slim", "debian:bookworm-slim", "busybox:1.36")


def test_an_arg_before_the_first_from_gives_its_default_and_a_default_written_in_the_from_counts():
    text = """
ARG PYTHON=3.12 VARIANT="slim"
ARG EMPTY
FROM python:${PYTHON}-$VARIANT
FROM registry.local/tool:${TAG:-1.0}${EMPTY:+-never}
"""

    assert base_images(text) == ("python:3.12-slim", "registry.local/tool:1.0")


@pytest.mark.parametrize(
    "text",
    [
        "FROM python:${UNDECLARED}\n",
        "FROM alpine\nARG TAG=3\nFROM python:$TAG\n",  # an ARG after a FROM is the stage's, not FROM's
        "ARG BASE\nFROM ${BASE:-$OTHER}\n",
        "FROM alpine\nCOPY --from=$SOURCE /a /b\n",
    ],
)
def test_a_base_named_by_a_variable_the_file_does_not_declare_is_unknown(text: str):
    assert base_images(text) is None


def test_continued_lines_comments_in_them_and_the_escape_directive_are_read_as_the_builder_does():
    text = (
        "# escape=`\n# a comment\nARG V=1 `\n    W=2\nfrom `\n  # inside\n  alpine:${V}.${W} as Stage\n"
        "FROM stage\n"
    )

    assert base_images(text) == ("alpine:1.2",)


def test_a_dockerfile_without_a_from_builds_on_nothing():
    assert base_images("# nothing yet\n") == ()

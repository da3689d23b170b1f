"""The end of a command's output as a person reads it: the last lines a terminal would show, without
escape codes, within a byte bound, valid Unicode."""

from __future__ import annotations

from agent_env._output_tail import TAIL_BYTES, TAIL_LINES, output_tail


def test_a_tail_is_what_a_terminal_shows_without_colours_redrawn_progress_or_control_characters() -> None:
    output = (
        "\x1b[1m============ test session starts ============\x1b[0m\r\n"
        "downloading uv  10%\rdownloading uv  60%\rdownloading uv 100%\r\n"
        "\x1b]0;pytest\x07\x1b[31mFAILED\x1b[0m test_outputs.py::test_hello - assert 'hi' == 'hello'\n"
        "bell\x07 and\tab\x00\n"
        "\n\n   \n"
    )

    assert output_tail(output) == (
        "============ test session starts ============\n"
        "downloading uv 100%\n"
        "FAILED test_outputs.py::test_hello - assert 'hi' == 'hello'\n"
        "bell and\tab"
    )


def test_a_tail_keeps_the_last_lines_and_no_more_bytes_than_its_bound_cut_between_lines() -> None:
    numbered = "\n".join(f"line {n}" for n in range(1, 201))
    wide = "\n".join(f"{n:03d} " + "x" * 96 for n in range(100))

    assert output_tail(numbered).splitlines() == [f"line {n}" for n in range(201 - TAIL_LINES, 201)]
    assert output_tail(numbered, lines=2) == "line 199\nline 200"
    kept = output_tail(wide)
    assert len(kept.encode()) <= TAIL_BYTES and kept.endswith("099 " + "x" * 96)
    assert all(len(line) == 100 for line in kept.splitlines())


def test_one_line_longer_than_the_bound_keeps_its_end_whole_characters_only() -> None:
    kept = output_tail("start " + "é" * 5000 + " end", max_bytes=101)

    assert kept.endswith("é end") and not kept.startswith("start")
    assert len(kept.encode()) <= 101
    kept.encode("utf-8", errors="strict")


def test_no_output_is_an_empty_tail_and_a_lone_surrogate_is_replaced() -> None:
    assert output_tail("") == "" and output_tail("\n\x1b[0m\n  \n") == ""
    assert output_tail("exit \ud800 code") == "exit \ufffd code"

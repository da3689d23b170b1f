"""A failed build's log as a load problem shows it: the failing step and its error lines, no escape
codes, a tool's retries as one line with their count, within a bound whatever the build printed."""

from __future__ import annotations

from agent_env.sandbox._build_log import MAX_LINE_CHARS, MAX_LINES, BuildLog

RED, BOLD, RESET = "\x1b[31m", "\x1b[1m", "\x1b[0m"
RETRY = (
    "{yellow}WARNING: Retrying (Retry(total={n}, connect=None, read=None, redirect=None, status=None)) "
    "after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection "
    "object at 0x7f3a{n}c2d9e50>: Failed to establish a new connection: [Errno 101] Network is "
    "unreachable')': /simple/requests/{reset}\n"
)


def streamed(*chunks: str) -> list[str]:
    log = BuildLog()
    for chunk in chunks:
        log.add(chunk)
    return log.lines()


def test_a_failed_pip_install_shows_its_step_its_errors_and_its_five_retries_as_one_line_without_escapes():
    chunks = [
        "Step 1/3 : FROM python:3.12-slim\n",
        " ---> 3f1ab2c4d5e6\n",
        "Step 2/3 : RUN pip install requests\n",
        " ---> Running in 9a8b7c6d5e4f\n",
        *(RETRY.format(yellow="\x1b[33m", n=n, reset=RESET) for n in range(4, -1, -1)),
        f"{RED}{BOLD}ERROR: Could not find a version that satisfies the requirement requests (from "
        f"versions: none){RESET}\n",
        f"{RED}ERROR: No matching distribution found for requests{RESET}\n",
    ]
    log = BuildLog()
    for chunk in chunks:
        log.add(chunk)
    log.add_line("The command '/bin/sh -c pip install requests' returned a non-zero code: 1")

    lines = log.lines()
    assert lines[0] == "Step 2/3 : RUN pip install requests"
    assert lines[1].startswith("WARNING: Retrying (Retry(total=4, connect=None")
    assert lines[1].endswith("/simple/requests/  (and 4 more like it)")
    assert lines[2:] == [
        "ERROR: Could not find a version that satisfies the requirement requests (from versions: none)",
        "ERROR: No matching distribution found for requests",
        "The command '/bin/sh -c pip install requests' returned a non-zero code: 1",
    ]
    assert not any("\x1b" in line for line in lines)


def test_a_progress_bar_redrawn_with_carriage_returns_shows_only_what_was_drawn_last():
    bar = "".join(f"\r\x1b[K{percent:3d}% |{'#' * (percent // 10):10}|" for percent in range(0, 101, 10))

    lines = streamed("Step 1/1 : RUN fetch\n", f"downloading {bar}\n", "done\n")

    assert lines == ["Step 1/1 : RUN fetch", "100% |##########|", "done"]


def test_a_step_that_prints_thousands_of_lines_shows_at_most_the_bound_its_first_errors_and_its_end():
    noise = "".join(f"compiling module {name}\n" for name in ("alpha", "beta", "gamma") * 2000)
    chunks = [
        "Step 4/9 : RUN make\n",
        "make: cc: Command not found\n",
        noise,
        "x" * (10 * MAX_LINE_CHARS) + "\n",
        "make: *** [all] Error 127\n",
    ]

    lines = streamed(*chunks)

    assert len(lines) <= MAX_LINES
    assert lines[:3] == ["Step 4/9 : RUN make", "make: cc: Command not found", lines[2]]
    assert lines[2].startswith("... (") and lines[2].endswith(" lines left out)")
    assert lines[-1] == "make: *** [all] Error 127"
    assert max(len(line) for line in lines) <= MAX_LINE_CHARS
    shown_or_counted = int(lines[2].split("(")[1].split()[0]) + len(lines) - 2
    assert shown_or_counted == 6000 + 3


def test_a_line_split_across_chunks_is_read_as_one_and_the_last_line_without_a_newline_is_kept():
    lines = streamed("Step 1/2 : RUN ap", "t-get install -y c", "url\n", "E: Unable to locate package curl")

    assert lines == ["Step 1/2 : RUN apt-get install -y curl", "E: Unable to locate package curl"]


def test_only_the_step_that_failed_is_shown_not_the_ones_that_succeeded_before_it():
    lines = streamed(
        "Step 1/3 : FROM base\n",
        "Step 2/3 : RUN echo fine\n",
        " ---> Running in 1234\n",
        "fine\n",
        "Removing intermediate container 1234\n",
        "Step 3/3 : RUN false\n",
    )

    assert lines == ["Step 3/3 : RUN false"]

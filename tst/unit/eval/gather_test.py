"""The gatherer behind a batched local policy: concurrent callers' requests answered by one run per batch."""

from __future__ import annotations

import threading
import time

import pytest

from agent_env.eval._gather import Gatherer

pytestmark = pytest.mark.needs("eval_installed")


class Recorded:
    """A batch function that answers each request doubled and keeps the batches it was given."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.batches: list[list[int]] = []
        self.seconds = seconds

    def __call__(self, requests: list[int]) -> list[int]:
        self.batches.append(list(requests))
        time.sleep(self.seconds)
        return [2 * request for request in requests]


def called_at_once(gatherer: Gatherer[int, int], requests: list[int]) -> list[int | BaseException]:
    """Each request from a thread of its own, all released together; each caller's answer or error."""
    outcomes: list[int | BaseException] = [0] * len(requests)
    start = threading.Barrier(len(requests))

    def call(n: int) -> None:
        start.wait(timeout=10)
        try:
            outcomes[n] = gatherer(requests[n])
        except Exception as exc:
            outcomes[n] = exc

    threads = [threading.Thread(target=call, args=(n,)) for n in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads)
    return outcomes


def test_concurrent_callers_each_get_their_own_answer_from_fewer_runs_than_callers() -> None:
    run = Recorded(seconds=0.05)
    gatherer = Gatherer(run, size=8, wait_s=0.05)

    outcomes = called_at_once(gatherer, list(range(8)))

    assert outcomes == [2 * n for n in range(8)]
    assert len(run.batches) < 8
    assert sorted(request for batch in run.batches for request in batch) == list(range(8))


def test_no_run_is_given_more_requests_than_the_batch_size() -> None:
    run = Recorded(seconds=0.02)
    gatherer = Gatherer(run, size=3, wait_s=0.05)

    outcomes = called_at_once(gatherer, list(range(10)))

    assert outcomes == [2 * n for n in range(10)]
    assert max(len(batch) for batch in run.batches) == 3


def test_a_lone_caller_is_held_no_longer_than_the_wait_for_others() -> None:
    run = Recorded()
    gatherer = Gatherer(run, size=8, wait_s=0.05)

    started = time.monotonic()
    answer = gatherer(21)

    assert answer == 42
    assert time.monotonic() - started < 1.0
    assert run.batches == [[21]]


def test_a_run_that_fails_fails_every_caller_in_its_batch() -> None:
    def run(requests: list[int]) -> list[int]:
        raise RuntimeError("out of memory")

    outcomes = called_at_once(Gatherer(run, size=4, wait_s=0.05), [1, 2, 3, 4])

    assert [type(outcome) for outcome in outcomes] == [RuntimeError] * 4
    assert {str(outcome) for outcome in outcomes} == {"out of memory"}


@pytest.mark.parametrize("size", [0, -1])
def test_a_batch_size_under_1_is_refused_naming_what_it_must_be(size: int) -> None:
    with pytest.raises(ValueError, match=f"batch must be >= 1 .*, got {size}"):
        Gatherer(Recorded(), size=size)

"""8. A fleet: tool calls/s through one AgentEnv over three servers against the same over one.

Three server processes of the bench bundle, up at once. At each level the same sessions play episodes
back to back (as in the load section: reset, 8 tool calls, end_turn, get_reward), in alternating
rounds: once through `AgentEnv([one])`, once through `AgentEnv([all three])`, each round starting
once every server is quiet. With the three, where the fleet placed the sessions is read from each
server's `/status` before they play. On this machine the servers and the trainer share 2 cores, so
the ratio says what spreading costs or gains here, not what three machines would give.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path

from bench.common import Figure, Results, server, settle
from bench.load import Load, through_agentenv

SERVERS = 3
ONE, FLEET = "1 server", f"{SERVERS} servers"


def _read_spread(urls: list[str], into: list[list[int]]) -> None:
    """What each server holds now, by its `/status`."""
    import httpx

    into.append([int(httpx.get(f"{url}/yard/status", timeout=10).json()["sessions"]["held"]) for url in urls])


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    levels, duration_s, rounds = ([6], 1.0, 2) if quick else ([64, 192], 8.0, 4)
    with contextlib.ExitStack() as stack:
        servers = [
            stack.enter_context(server("bundle", workdir=workdir / f"fleet-{i}")) for i in range(SERVERS)
        ]
        urls = [served.url for served in servers]
        for sessions in levels:
            loads = {ONE: Load(), FLEET: Load()}
            spread: list[list[int]] = []
            for _ in range(rounds):
                for name, used in ((ONE, urls[:1]), (FLEET, urls)):
                    settle(servers)
                    read = functools.partial(_read_spread, used, spread) if name == FLEET else None
                    loads[name].add(through_agentenv(used, sessions, duration_s / rounds, placed=read))
            one, fleet = loads[ONE], loads[FLEET]
            results.add(
                Figure(
                    "fleet", f"{ONE}, {sessions} sessions: tool calls/s", one.calls_per_s, "/s", lower=False
                ),
                Figure(
                    "fleet",
                    f"{FLEET}, {sessions} sessions: tool calls/s",
                    fleet.calls_per_s,
                    "/s",
                    lower=False,
                ),
                Figure(
                    "fleet",
                    f"{FLEET} / {ONE}, tool calls/s, {sessions} sessions",
                    fleet.calls_per_s / one.calls_per_s,
                    "x",
                    lower=False,
                ),
                Figure(
                    "fleet",
                    f"{FLEET}, {sessions} sessions: most held by one server less the fewest, worst round",
                    float(max(max(held) - min(held) for held in spread)),
                    "",
                ),
                Figure(
                    "fleet",
                    f"{ONE} and {FLEET}, {sessions} sessions: errors",
                    float(one.errors + fleet.errors),
                    "",
                    0.0,
                ),
            )

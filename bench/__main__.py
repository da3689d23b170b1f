"""`python -m bench [--quick] [--out DIR] [--only SECTION ...]`: run the benchmarks, print the table."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from bench import (
    batch_scoring,
    commands,
    crash,
    curriculum,
    deploy,
    fleet,
    harbor,
    harbor_dataset,
    judges,
    load,
    overhead,
    sandboxes,
    startup,
    threads,
    trainers,
)
from bench.common import ROOT, Results
from bench.report import machine, save, table

SECTIONS = {
    "overhead": overhead.run,
    "load": load.run,
    "deploy": deploy.run,
    "crash": crash.run,
    "startup": startup.run,
    "commands": commands.run,
    "sandboxes": sandboxes.run,
    "harbor": harbor.run,
    "dataset": harbor_dataset.run,
    "fleet": fleet.run,
    "trainers": trainers.run,
    "batch": batch_scoring.run,
    "judges": judges.run,
    "curriculum": curriculum.run,
    "threads": threads.run,
}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="few samples: to check the bench still runs")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    parser.add_argument("--only", nargs="+", choices=list(SECTIONS), help="run only these sections")
    args = parser.parse_args()
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(name, "1")
    results = Results()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="agent-env-bench-") as work:
        for name in args.only or list(SECTIONS):
            section_start = time.perf_counter()
            SECTIONS[name](results, Path(work), quick=args.quick)
            print(f"bench: {name} done in {time.perf_counter() - section_start:.1f} s", flush=True)
    print(f"\nagentenv-framework benchmarks{' (quick)' if args.quick else ''}: {machine()}\n")
    print(table(results))
    written = save(results, args.out)
    print(f"\nwritten: {', '.join(str(p) for p in written)}; {time.perf_counter() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

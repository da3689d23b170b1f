"""The benchmarks' report: one table of every figure against its target, a JSON copy, and a plot."""

from __future__ import annotations

import json
import math
import platform
from pathlib import Path

from bench.common import Results


def machine() -> str:
    cores = len(__import__("os").sched_getaffinity(0))
    return (
        f"{platform.python_implementation()} {platform.python_version()}, {cores} cores, {platform.machine()}"
    )


def table(results: Results) -> str:
    rows = [("section", "figure", "value", "target", "")]
    for figure in results.figures:
        value = "n/a" if math.isnan(figure.value) else f"{figure.value:,.3g} {figure.unit}".strip()
        target = (
            ""
            if figure.target is None
            else f"{'<=' if figure.lower else '>='} {figure.target:g} {figure.unit}"
        )
        rows.append(
            (
                figure.section,
                figure.name + (f" ({figure.note})" if figure.note else ""),
                value,
                target,
                figure.verdict,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def save(results: Results, out: Path) -> list[Path]:
    """Write results.json and, when matplotlib is there, latency.png and throughput.png."""
    out.mkdir(parents=True, exist_ok=True)
    data = {
        "machine": machine(),
        "figures": [vars(f) | {"verdict": f.verdict} for f in results.figures],
        "throughput": {k: {str(n): v for n, v in series.items()} for k, series in results.throughput.items()},
    }
    (out / "results.json").write_text(json.dumps(data, indent=2) + "\n")
    written = [out / "results.json"]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return written
    figure, (latency, throughput) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, samples in results.latencies.items():
        ordered = sorted(s * 1e3 for s in samples)
        latency.plot(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], label=name)
    latency.set_xscale("log")
    latency.set_xlabel("latency of one call (ms, log scale)")
    latency.set_ylabel("share of calls at most this long")
    latency.set_title("Tool-call latency")
    if results.latencies:
        latency.legend()
    for name, series in results.throughput.items():
        sessions = sorted(series)
        throughput.plot(sessions, [series[n] for n in sessions], marker="o", label=name)
    throughput.set_xscale("log", base=2)
    throughput.set_xlabel("concurrent sessions")
    throughput.set_ylabel("tool calls per second")
    throughput.set_title("Throughput against concurrency")
    if results.throughput:
        throughput.legend()
    figure.suptitle(f"agentenv-framework benchmarks: {machine()}")
    figure.tight_layout()
    figure.savefig(out / "bench.png", dpi=110)
    plt.close(figure)
    return [*written, out / "bench.png"]

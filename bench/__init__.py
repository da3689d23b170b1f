"""Benchmarks: the cost of every layer between a trainer's tool call and the tool, side by side.

    python -m bench [--quick] [--out bench/out]

Not a test: it prints figures and ratios against targets; CI runs `--quick` only to see it still runs.
"""

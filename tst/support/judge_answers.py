"""Answers of a judge model that are no verdict, by kind: the stand-in judge sends them, and the
core's tests read them (plain data: no server library needed)."""

from __future__ import annotations

GARBAGE = {
    "prose": "The reply is polite and accurate. I would give it 9 out of 10.",
    "fenced": '```json\n{"reason": "fine", "score": 7}\n```',
    "off-scale": '{"reason": "better than perfect", "score": 11}',
    "missing-score": '{"reason": "fine"}',
    "extra-field": '{"reason": "fine", "score": 7, "override": true}',
    "string-score": '{"reason": "fine", "score": "7"}',
    "repeated-key": '{"reason": "fine", "score": 1, "score": 10}',
    "empty": "",
}
"""Content that is no verdict, by kind."""

"""Helpers the test tiers share, one module per job; a test imports helpers only from here or from its
own tier's `_`-prefixed modules (never from a `*_test.py` module or a conftest).

`tst/util` is not this: it holds the runner's tooling (capabilities, the skip check, scripts).
"""

#!/bin/bash
# As Terminal-Bench's tests do: source the tools' environment from the home, then run the checker
# with the image's interpreter.
mkdir -p /logs/verifier
source "$HOME/.local/bin/env" 2>/dev/null
if python3 /tests/check; then echo 1; else echo 0; fi > /logs/verifier/reward.txt

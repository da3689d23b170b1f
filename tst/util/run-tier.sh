#!/usr/bin/env bash
# Runs pytest over the given folders; a run that collects no test fails loudly instead of passing.
set -uo pipefail
python -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "run-tier: pytest collected no tests in: $* (a tier with no tests fails)" >&2
fi
exit "$rc"

#!/usr/bin/env bash
# run-tier.sh NAME PYTEST_ARGS...: runs pytest; a run that collects no test fails loudly instead of
# passing. With AGENT_ENV_REPORTS set to a folder, it also writes the JUnit XML report NAME.xml there,
# for tst/util/check_skips.py. PYTHON (the Makefile's) is the interpreter. The 25 slowest tests are
# listed at the end, so a run shows where its time goes.
set -uo pipefail
name=$1
shift
report=()
if [ -n "${AGENT_ENV_REPORTS:-}" ]; then
  mkdir -p "$AGENT_ENV_REPORTS"
  report=("--junitxml=$AGENT_ENV_REPORTS/$name.xml")
fi
"${PYTHON:-python}" -m pytest --durations=25 "${report[@]}" "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "run-tier: pytest collected no tests in: $* (a tier with no tests fails)" >&2
fi
exit "$rc"

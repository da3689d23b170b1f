#!/bin/bash
# Two named rewards: the count is right, and it is written as a bare number.
mkdir -p /logs/verifier
count=$(cat /data/count.txt 2>/dev/null)
correct=0; bare=0
[ "$(echo "$count" | tr -d ' ')" = "$EXPECTED" ] && correct=1
echo "$count" | grep -qx '[0-9][0-9]*' && bare=1
printf '{"reward": %s, "correct": %s, "bare_number": %s, "note": "named numbers"}\n' \
  "$correct" "$correct" "$bare" > /logs/verifier/reward.json

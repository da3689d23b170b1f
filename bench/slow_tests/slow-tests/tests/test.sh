#!/bin/bash
# A test suite that takes 2 s, as a real one takes seconds: what a batch waits for when scored.
sleep 2
mkdir -p /logs/verifier
echo 1 > /logs/verifier/reward.txt

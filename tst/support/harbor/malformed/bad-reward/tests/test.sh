#!/bin/bash
mkdir -p /logs/verifier
printf "%s" "$REWARD" > /logs/verifier/reward.txt

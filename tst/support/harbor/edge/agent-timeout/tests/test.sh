#!/bin/bash
mkdir -p /logs/verifier
if [ -f /work/state ]; then echo 0.25; else echo 0; fi > /logs/verifier/reward.txt

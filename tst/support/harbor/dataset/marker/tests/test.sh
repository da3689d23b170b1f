#!/bin/bash
mkdir -p /logs/verifier
if [ -f /work/done ]; then echo 1.0; else echo 0.0; fi > /logs/verifier/reward.txt

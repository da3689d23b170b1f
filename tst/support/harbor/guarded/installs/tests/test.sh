#!/bin/bash
mkdir -p /logs/verifier
if grep -qx hello /usr/local/lib/greeter/greeting.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt

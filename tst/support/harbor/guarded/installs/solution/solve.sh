#!/bin/bash
mkdir -p /usr/local/lib/greeter
echo hello > /usr/local/lib/greeter/greeting.txt

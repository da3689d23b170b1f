#!/bin/bash
wc -l < /data/manifest.txt | tr -d " " > /data/count.txt

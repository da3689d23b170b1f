#!/bin/bash
touch done

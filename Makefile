# agentenv-framework: every command a developer or CI runs.
PYTHON ?= python
PYTEST := $(PYTHON) -m pytest
# torch is the trainer's to pin, never the package's: the dev install takes the CPU build first, so
# nothing later pulls a multi-GB CUDA build.
TORCH ?= torch==2.13.0
# TRL, like torch, is pinned here (the dev and test install), never in the package's extras.
TRL ?= trl==1.16.*
EXTRAS ?= dev,openenv,trl,docker

.PHONY: install test unit integration trl-test lint format demo replay

install:
	$(PYTHON) -m pip install $(TORCH)
	$(PYTHON) -m pip install -e '.[$(EXTRAS)]' '$(TRL)'

# The unit tier, then the integration tier (its tests skip, with their declared reason, without a
# Docker engine). pytest's exit 5 ("no tests ran") fails the target with a message.
test:
	@bash tst/util/run-tier.sh tst/unit tst/integration

unit:
	@bash tst/util/run-tier.sh tst/unit

integration:
	@bash tst/util/run-tier.sh tst/integration

trl-test:
	@bash tst/util/run-tier.sh tst/trl

lint:
	$(PYTHON) -m ruff check agent_env tst examples
	$(PYTHON) -m ruff format --check agent_env tst examples
	$(PYTHON) -m mypy

format:
	$(PYTHON) -m ruff format agent_env tst examples
	$(PYTHON) -m ruff check --fix agent_env tst examples

# The main job: GRPOTrainer trains a tiny model, built offline, on the CPU for a few steps on the
# example bundle served in process, and prints a table per step. `make replay` plays every task's
# reference play instead and prints the scores.
demo:
	$(PYTHON) examples/train_grpo.py

replay:
	$(PYTHON) -m agent_env.cli replay examples/harbor

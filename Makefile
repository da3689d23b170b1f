# agentenv-framework: every command a developer or CI runs.
PYTHON ?= python
PYTEST := $(PYTHON) -m pytest
# torch is the trainer's to pin, never the package's: the dev install takes the CPU build first, so
# nothing later pulls a multi-GB CUDA build.
TORCH ?= torch==2.13.0
EXTRAS ?= dev,openenv,docker

.PHONY: install test unit integration trl-test lint format demo

install:
	$(PYTHON) -m pip install $(TORCH)
	$(PYTHON) -m pip install -e '.[$(EXTRAS)]'

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

# For now: every example task played by its reference play through the Episode API, with scores.
demo:
	$(PYTHON) -m agent_env.cli replay examples/harbor

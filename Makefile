# agentenv-framework: every command a developer or CI runs.
PYTHON ?= python
PYTEST := $(PYTHON) -m pytest
# torch is the trainer's to pin, never the package's: the dev install takes the CPU build first, so
# nothing later pulls a multi-GB CUDA build.
TORCH ?= torch==2.13.0
# TRL, like torch, is pinned here (the dev and test install), never in the package's extras.
TRL ?= trl==1.16.*
EXTRAS ?= dev,openenv,trl,docker

.PHONY: install test unit integration reliability trl-test lint format demo replay sandbox-image docker-engine bench bench-quick

install:
	$(PYTHON) -m pip install $(TORCH)
	$(PYTHON) -m pip install -e '.[$(EXTRAS)]' '$(TRL)'

# The unit tier, then the integration tier (its tests skip, with their declared reason, without a
# Docker engine). pytest's exit 5 ("no tests ran") fails the target with a message.
test:
	@bash tst/util/run-tier.sh test tst/unit tst/integration

unit:
	@bash tst/util/run-tier.sh unit tst/unit

integration:
	@bash tst/util/run-tier.sh integration tst/integration

trl-test:
	@bash tst/util/run-tier.sh trl tst/trl

# Hostile input, faults and load against real servers on loopback, each bounded in time.
reliability:
	@bash tst/util/run-tier.sh reliability tst/reliability

# The Docker sandbox's image (bash and busybox from Debian's static packages), built into the engine.
sandbox-image:
	$(PYTHON) -m agent_env.cli sandbox-image

# A Docker engine on this machine for the integration tier: installs Debian's docker.io if needed and
# starts it on loopback only (`bash tst/util/docker-engine.sh stop` stops it).
docker-engine:
	bash tst/util/docker-engine.sh install
	bash tst/util/docker-engine.sh start

# The benchmarks (bench/): every layer's cost side by side, a table against the targets, and
# bench/out/bench.png. It takes about 5 minutes; the Docker figures need an engine and the image.
bench:
	$(PYTHON) -m bench

# The same with few samples, to check the benchmarks still run (CI runs this); its figures mean little.
bench-quick:
	$(PYTHON) -m bench --quick --out $${BENCH_OUT:-bench/out/quick}

lint:
	$(PYTHON) -m ruff check agent_env tst examples tools bench
	$(PYTHON) -m ruff format --check agent_env tst examples tools bench
	$(PYTHON) -m mypy
	$(PYTHON) -m mypy --strict tools bench

format:
	$(PYTHON) -m ruff format agent_env tst examples tools bench
	$(PYTHON) -m ruff check --fix agent_env tst examples tools bench

# The main job: GRPOTrainer trains a tiny model, built offline, on the CPU for a few steps on the
# example bundle served in process, and prints a table per step. `make replay` plays every task's
# reference play instead and prints the scores.
demo:
	$(PYTHON) examples/train_grpo.py

replay:
	$(PYTHON) -m agent_env.cli replay examples/harbor

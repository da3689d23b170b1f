# agentenv-framework: every command a developer or CI runs.
# Everything runs in the project's own virtualenv, which `make install` makes from the machine's
# Python: what is installed there is the lock and nothing else the machine holds. `PYTHON=...` runs
# the targets with another interpreter instead (its environment then holds what it holds).
VENV ?= .venv
VENV_PYTHON := $(abspath $(VENV))/bin/python
PYTHON ?= $(VENV_PYTHON)
BASE_PYTHON ?= python3
export PYTHON
# The dev/test install is locked: requirements/dev.lock pins, with their hashes, every distribution
# `make install` brings, torch's CPU build and TRL included (requirements/pins.in: the trainer's pins,
# never the package's extras, which stay ranges). `make lock` re-resolves it on purpose.
LOCK := requirements/dev.lock
PINS := requirements/pins.in
EXTRAS := dev openenv trl docker eval mcp users judge
# Where torch's CPU build is found: the folder LOCAL_TORCH_WHEELS when the machine has it (this one
# does), else PyTorch's CPU index; TORCH_WHEELS=... names another (uv reads either as --find-links).
LOCAL_TORCH_WHEELS ?= /opt/wheels
TORCH_WHEELS ?= $(if $(wildcard $(LOCAL_TORCH_WHEELS)),$(LOCAL_TORCH_WHEELS),https://download.pytorch.org/whl/cpu/torch/)
# `make lock` resolves the newest releases that fit; `make lock UPGRADE=` keeps the locked ones that still do.
UPGRADE ?= --upgrade
# `make test-core`'s virtualenv: the core alone and the test runner, at the lock's versions.
CORE_VENV ?= .venv-core
CORE_PYTHON := $(abspath $(CORE_VENV))/bin/python

.PHONY: install installed lock notices trajectory-schema viewer-screenshot docs docs-screenshot chromium test unit test-core integration dist-test reliability trl-test lint format demo replay sandbox-image docker-engine bench bench-quick

# The virtualenv is made only when PYTHON is its interpreter.
OWN_VENV := $(filter $(VENV_PYTHON),$(PYTHON))

$(VENV_PYTHON):
	$(BASE_PYTHON) -m venv $(VENV)

# uv first, its entry of the lock installed by pip with its hashes checked; then, by uv, exactly the
# lock, every file checked against its hash, wheels only (no build runs with tools the lock does not
# pin): seconds where pip takes two to three minutes; then the package itself, built by the locked
# setuptools; then the environment checked against its requirements. uv trusts the platform's
# certificates (`--system-certs`), as pip does, not only those it was built with.
install: $(OWN_VENV)
	$(PYTHON) -m tools.lock_entries uv | $(PYTHON) -m pip install --quiet --require-hashes --no-deps --only-binary :all: -r /dev/stdin
	$(PYTHON) -m uv pip install --system-certs --python $(PYTHON) --require-hashes --only-binary :all: --find-links $(TORCH_WHEELS) -r $(LOCK)
	$(PYTHON) -m uv pip install --system-certs --python $(PYTHON) --no-deps --no-build-isolation --editable .
	@$(PYTHON) -m uv pip check --python $(PYTHON) || { echo "make install: $(PYTHON)'s environment holds packages that \
	conflict with the lock (above); install into a virtualenv of its own: make install, with PYTHON unset" >&2; exit 1; }

# Every other target needs the install; without it, this says so instead of a missing interpreter.
installed:
	@$(PYTHON) -c "import agent_env, pytest" 2>/dev/null || { echo "make: nothing is installed for \
	$(PYTHON): run make install first" >&2; exit 1; }

# Re-resolve the lock from pyproject.toml's extras and the pins, for CPython 3.11 on x86_64 Linux
# whatever machine runs it; install it here; then regenerate the notices from what it installed.
# Review both diffs (CONTRIBUTING.md). Needs uv, which the lock installs: `make install` first.
lock: installed
	$(PYTHON) -m uv pip compile --quiet --system-certs pyproject.toml $(EXTRAS:%=--extra %) $(PINS) \
		--python-version 3.11 --python-platform x86_64-manylinux_2_28 --only-binary :all: \
		--find-links $(TORCH_WHEELS) --generate-hashes $(UPGRADE) --custom-compile-command "make lock" \
		--output-file $(LOCK)
	$(MAKE) install
	$(MAKE) notices

# THIRD_PARTY_NOTICES.md from the installed packages, which must be the locked ones (make lock runs it).
notices: installed
	$(PYTHON) -m tools.notices --output THIRD_PARTY_NOTICES.md

# docs/trajectory.schema.json, the published JSON Schema of a trajectory (a unit test keeps it current).
trajectory-schema: installed
	$(PYTHON) -c "import json, agent_env; print(json.dumps(agent_env.Trajectory.model_json_schema(), indent=2))" > docs/trajectory.schema.json

# docs/viewer.png, the README's picture of `agent-env view`: the page test's episode, in headless
# Chromium (make chromium installs Debian's chromium and chromium-driver).
viewer-screenshot: installed
	AGENT_ENV_REQUIRE=chromium AGENT_ENV_VIEWER_SCREENSHOT=docs/viewer.png $(PYTHON) -m pytest -q -p no:cacheprovider \
		tst/unit/view/page_test.py -k an_episode_shows

chromium:
	bash tst/util/chromium.sh install

# The documentation site (mkdocs.yml, docs/) into site/ (DOCS_OUT=... elsewhere): --strict, so a broken
# link or anchor, a page left out of the nav or an API name that does not exist fails it; offline (no
# web font, no script from elsewhere). The CLI's and the Python API's pages come from the code itself.
docs: installed
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs build --strict --site-dir $${DOCS_OUT:-site}

# docs/site.png, the site's home page in headless Chromium (the site's page test; make chromium).
docs-screenshot: installed
	AGENT_ENV_REQUIRE=chromium AGENT_ENV_DOCS_SCREENSHOT=docs/site.png $(PYTHON) -m pytest -q -p no:cacheprovider \
		tst/unit/documentation/site_test.py -k home_page

# The unit tier, the integration tier (its tests skip, with their declared reason, without a Docker
# engine), then the distribution tier (the wheel and sdist built, the wheel installed into a clean
# virtualenv from the package index). pytest's exit 5 ("no tests ran") fails the target with a message.
test: installed
	@bash tst/util/run-tier.sh test tst/unit tst/integration tst/dist

unit: installed
	@bash tst/util/run-tier.sh unit tst/unit

# The core's unit tests on an install of the core alone (no extra, no torch, no TRL): a virtualenv of
# their own, made from the lock's entries for the core's dependencies and the test runner
# (tools/core_lock.py), hashes checked; the extras' tests skip there, each naming its install line.
# The virtualenv is remade when the lock or pyproject.toml changes.
# uv, from the full install, installs it (the virtualenv gets no uv of its own).
$(CORE_VENV)/.installed: $(LOCK) pyproject.toml tools/core_lock.py | installed
	rm -rf $(CORE_VENV)
	$(BASE_PYTHON) -m venv $(CORE_VENV)
	$(BASE_PYTHON) -m tools.core_lock > $(CORE_VENV)/core.lock
	$(PYTHON) -m uv pip install --quiet --system-certs --python $(CORE_PYTHON) --require-hashes --only-binary :all: -r $(CORE_VENV)/core.lock
	$(PYTHON) -m uv pip install --quiet --system-certs --python $(CORE_PYTHON) --no-deps --no-build-isolation --editable .
	@touch $@

test-core: $(CORE_VENV)/.installed
	@PYTHON=$(CORE_PYTHON) bash tst/util/run-tier.sh core tst/unit

integration: installed
	@bash tst/util/run-tier.sh integration tst/integration

dist-test: installed
	@bash tst/util/run-tier.sh dist tst/dist

trl-test: installed
	@bash tst/util/run-tier.sh trl tst/trl

# Hostile input, faults and load against real servers on loopback, each bounded in time.
reliability: installed
	@bash tst/util/run-tier.sh reliability tst/reliability

# The Docker sandbox's image (bash and busybox from Debian's static packages), built into the engine.
sandbox-image: installed
	$(PYTHON) -m agent_env.cli sandbox-image

# A Docker engine on this machine for the integration tier: installs Debian's docker.io if needed and
# starts it on loopback only (`bash tst/util/docker-engine.sh stop` stops it).
docker-engine:
	bash tst/util/docker-engine.sh install
	bash tst/util/docker-engine.sh start

# The benchmarks (bench/): every layer's cost side by side, a table against the targets, and
# bench/out/bench.png. It takes about 5 minutes; the Docker figures need an engine and the image.
bench: installed
	$(PYTHON) -m bench

# The same with few samples, to check the benchmarks still run (CI runs this); its figures mean little.
bench-quick: installed
	$(PYTHON) -m bench --quick --out $${BENCH_OUT:-bench/out/quick}

lint: installed
	$(PYTHON) -m ruff check agent_env tst examples tools bench deploy
	$(PYTHON) -m ruff format --check agent_env tst examples tools bench deploy
	$(PYTHON) -m mypy
	$(PYTHON) -m mypy --strict tools bench deploy/healthcheck.py

format: installed
	$(PYTHON) -m ruff format agent_env tst examples tools bench deploy
	$(PYTHON) -m ruff check --fix agent_env tst examples tools bench deploy

# The main job: GRPOTrainer trains a tiny model, built offline, on the CPU for a few steps on the
# example bundle served in process, and prints a table per step. `make replay` plays every task's
# reference play instead and prints the scores.
demo: installed
	$(PYTHON) examples/demo.py

replay: installed
	$(PYTHON) -m agent_env.cli replay examples/wharf

# Fresh-machine entry points:  make demo  |  make test
# Both create .venv and install the pinned stack first (requirements/lock.txt).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
KERNELBENCH ?= $(shell [ -d ../shared/kernelbench ] && echo ../shared/kernelbench)
DEVICE ?= auto
OUT    ?= runs/demo
# The suite's processes spend most of their time waiting on the evaluator's subprocesses: two test processes,
# each test file in one of them (a module's shared pool stays one), keep 2 cores busy. PARALLEL= runs it in one.
PARALLEL ?= -n 2 --dist loadfile

.PHONY: venv test test-fast demo smoke clean gpu-prep

venv: $(VENV)/.installed

# torch first and alone: `pip install torch==2.13.0` resolves to the local CPU wheel on CPU machines and
# to the default (CUDA) wheel elsewhere; everything after it must not move it.
# Candidate code runs only inside bubblewrap (drk.gym.sandbox.isolation): install it where this user can.
$(VENV)/.installed: pyproject.toml requirements/lock.txt
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; } || \
	  echo "note: bubblewrap (bwrap) is missing: install it, or the evaluator refuses to run candidate code"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -c requirements/lock.txt -e '.[dev]'
	touch $@

test: venv
	$(PY) -m pytest -q -ra $(PARALLEL)

test-fast: venv
	$(PY) -m pytest -q -ra -m 'not slow and not gpu' $(PARALLEL)

demo: venv
	$(VENV)/bin/drk eval --level 1,2 --solutions data/solutions $(if $(KERNELBENCH),--kernelbench $(KERNELBENCH)) \
	  --device $(DEVICE) --out $(OUT)

# Does the pipeline learn? collect (template teacher) -> SFT (offline "small" Qwen3) -> RL against the real CPU
# evaluator, then a check of metrics.jsonl (bench/learning_smoke_check.py). About 10 minutes on 2 cores; not in
# `make test`. One torch thread per process: on a small shared machine two threads that wait on each other made
# SFT steps several times slower than one. `make smoke PY=/path/to/python` uses an existing environment instead
# of .venv; PYTHONPATH=src makes it run this checkout's code whatever that environment has installed.
SMOKE ?= runs/smoke
SMOKE_RUN = OMP_NUM_THREADS=1 PYTHONPATH=src $(PY) -m drk
smoke: $(if $(filter $(VENV)/bin/python,$(PY)),venv)
	rm -rf $(SMOKE)
	$(SMOKE_RUN) collect -c recipes/smoke/collect.yaml --out $(SMOKE)/collect
	$(SMOKE_RUN) sft -c recipes/smoke/sft.yaml --data $(SMOKE)/collect/trajectories.jsonl --out $(SMOKE)/sft
	$(SMOKE_RUN) rl -c recipes/smoke/rl.yaml --model $(SMOKE)/sft --out $(SMOKE)/rl
	$(PY) bench/learning_smoke_check.py $(SMOKE)/rl/metrics.jsonl

# Before GPU measurement calls on the lent H200 (bench/gpu_session.sh): KernelBench problem files into the
# git-ignored .dev/kb (carried with the call, never committed), bubblewrap's .deb into .dev/deb and the wheels
# the GPU image lacks into .whl. The template teacher's trajectories for `gpu_session.sh rlvstrl` are collected
# here on the CPU into .dev/learn-collect, because device time is the scarce part of a call (figures:
# docs/measurements/rl-step-throughput.md); the `learn` part still collects on the GPU, since its data are part
# of what it measures.
gpu-prep: venv
	@test -n "$(KERNELBENCH)" || (echo "set KERNELBENCH=/path/to/KernelBench/problems" && exit 2)
	mkdir -p .dev/kb .dev/deb && cp -r $(KERNELBENCH)/level1 $(KERNELBENCH)/level2 .dev/kb/
	cd .dev/deb && apt-get download bubblewrap  # the GPU image has no bwrap: unpacked there with dpkg -x
	grep -qxF '/.dev/' .git/info/exclude || echo '/.dev/' >> .git/info/exclude
	bash ../shared/device/wheels.sh
	[ -s .dev/learn-collect/trajectories.jsonl ] || PYTHONPATH=src $(PY) -m drk collect -c recipes/gpu-learn/collect.yaml \
	  --out .dev/learn-collect --set device=cpu --set workers=2

clean:
	rm -rf $(VENV) runs .pytest_cache

# Two commands: `make run` opens the planner on a built-in demo model; `make test` runs the linters
# (`make lint`: ruff, import-linter contracts, mypy) and then the tests.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run lint test install clean

$(PY):
	python3 -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,nvidia,llm]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/planner

# Every checker runs even when an earlier one fails, so one pass shows all that is wrong.
lint: $(STAMP)
	@status=0; \
	echo "ruff check planner targets tests benchmarks"; $(VENV)/bin/ruff check planner targets tests benchmarks || status=1; \
	echo "lint-imports"; $(VENV)/bin/lint-imports || status=1; \
	echo "mypy planner targets"; $(VENV)/bin/mypy planner targets || status=1; \
	exit $$status

# One run, four at a time (pytest-xdist), a test file per worker so module fixtures (a plan shared by a file's
# tests) are measured once. The session's shared plans (tests/conftest.py: tiny_plan, digits_pipeline_plan) run
# once per run under a file lock, not once per worker. Four workers on two cores: the measuring loops are bounded
# in time, not in work, and many tests wait (a scripted host's steps, a TUI's pilot, a hang timeout), so a fourth
# worker could overlap those waits; the tests assert behaviour, never speed, so they must pass under that load. On
# a 2-core AMD EPYC a fresh clone's pytest read 10:10 with three workers and 10:16 with four: no faster, and green.
# With the decoder-LLM tests (issue 39: a shared tiny-Llama plan, the runtimes' own tests) it read 11:41, CPU-bound.
# The 25 slowest tests are listed at the end, so a run that nears the 10-minute limit says where to cut.
test: lint
	$(PY) -m pytest -q -n 4 --dist loadfile --durations=25

clean:
	rm -rf $(VENV) build *.egg-info

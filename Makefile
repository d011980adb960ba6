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
	$(PY) -m pip install --quiet -e ".[dev,nvidia]"
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

# The TUI tests that replay recorded sessions, and the SSH tests with a scripted remote engine, measure nothing and
# mostly wait (on Textual, on processes starting, on a scripted engine's paced steps): they run three at a time
# (pytest-xdist), which keeps both cores busy. Everything that measures runs one at a time, as measurements must not
# compete.
test: lint
	$(PY) -m pytest -q -n 3 -m "recorded_tui or scripted_ssh" tests/tui tests/ssh
	$(PY) -m pytest -q -m "not recorded_tui and not scripted_ssh"

clean:
	rm -rf $(VENV) build *.egg-info

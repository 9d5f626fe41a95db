# Two entry points, used verbatim by the README and by .ci/run.
PY ?= python3
VENV ?= .venv
PIP = $(VENV)/bin/pip install -q -c constraints.txt
# The venv's bin first: its tools before the system's (perfbench's own builds pick the venv's ninja
# anyway, perfbench/task/native_build.py; a candidate's own load_inline finds it on PATH).
export PATH := $(abspath $(VENV))/bin:$(PATH)

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(PIP) -e '.[test]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/perfbench score tasks/row_softmax tasks/row_softmax/solution.py

# The tests two at a time (pytest-xdist; work-stealing, as their lengths differ a hundredfold),
# then those that need every core of the machine alone (`serial`: tests/conftest.py's SERIAL).
TEST_WORKERS ?= 2
test: install
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal -m 'not validation and not serial'
	$(VENV)/bin/python -m pytest -q -m 'serial and not validation'

# The shipped tasks' solutions faster and starters earning nothing, timed for real (~1 min;
# `perfbench validate` is the fuller check, per task).
validation: install
	$(VENV)/bin/python -m pytest -q -m validation tests/integration/test_shipped_tasks.py

# Mutation score of the pure layer (#63; ~15-30 min, not in CI): mutmut over [tool.mutmut]'s files in a
# copy of the checkout, the survivors printed against benchmarks/equivalent_mutants.txt.
mutation: install
	$(PIP) mutmut==3.8.1
	$(VENV)/bin/python benchmarks/mutation_score.py

# Optional: Scorch (docs/scorch.md) from the user's own clone.  Only an editable install without
# build isolation works: its setup.py imports torch, and at import it looks for its source tree.
scorch: install
	@test -n "$(SCORCH_SRC)" || { echo "usage: make scorch SCORCH_SRC=/path/to/scorch-clone" >&2; exit 2; }
	$(VENV)/bin/pip install -q -c constraints.txt --no-build-isolation -e "$(SCORCH_SRC)"

.PHONY: install demo test validation mutation scorch

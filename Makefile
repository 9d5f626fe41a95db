# Two entry points, used verbatim by the README and by .ci/run.
PY ?= python3
VENV ?= .venv
PIP = $(VENV)/bin/pip install -q -c constraints.txt
# The venv's bin first: torch's C++ extension builder looks for ninja on PATH.
export PATH := $(abspath $(VENV))/bin:$(PATH)

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(PIP) -e '.[test]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/perfbench score tasks/row_softmax tasks/row_softmax/solution.py

test: install
	$(VENV)/bin/python -m pytest -q

.PHONY: install demo test

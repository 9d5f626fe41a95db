# Two entry points, used verbatim by the README and by .ci/run.
PY ?= python3
VENV ?= .venv
PIP = $(VENV)/bin/pip install -q -c constraints.txt

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(PIP) -e '.[test]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/perfbench compare examples/softmax_unfused.py examples/softmax_fused.py

test: install
	$(VENV)/bin/python -m pytest -q

.PHONY: install demo test

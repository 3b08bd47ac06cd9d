VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?= -m "not slow"

.PHONY: venv test demo bench clean screenshots

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(VENV)/.installed

venv: $(VENV)/.installed

test: venv
	$(PY) -m pytest $(PYTEST_ARGS)

demo: venv
	$(VENV)/bin/otel-inputs demo --out demo-data

bench: venv
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) demo-data .pytest_cache

screenshots: venv
	$(PY) scripts/screenshots.py --out docs/images

VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
# `make test` is the suite a newcomer runs, on both cores: everything but the long soak and
# campaign runs (`slow`) and the heavy third-party suites, which `make test-thirdparty` runs (CI
# runs both; see .ci/run).
THIRDPARTY := phoenix or frameworks or coding_agents
PYTEST_ARGS ?= -n auto -m "not slow and not ($(THIRDPARTY))"
JS_INTEROP := tests/interop/js

.PHONY: venv test test-thirdparty demo bench clean screenshots

# Each stamp records one install; scripts/venv.sh uses uv (seconds), else pip.
$(VENV)/.installed-viewer: pyproject.toml scripts/venv.sh
	@scripts/venv.sh $(VENV) viewer
	@touch $@

$(VENV)/.installed-dev: pyproject.toml scripts/venv.sh
	@scripts/venv.sh $(VENV) dev
	@touch $@ $(VENV)/.installed-viewer

$(VENV)/.installed-thirdparty: pyproject.toml scripts/venv.sh
	@scripts/venv.sh $(VENV) dev,clickhouse,phoenix
	@touch $@ $(VENV)/.installed-dev $(VENV)/.installed-viewer

venv: $(VENV)/.installed-dev

# The official OpenTelemetry JS SDK for tests/interop, as package-lock.json pins it; without npm
# those tests skip and say why.
$(JS_INTEROP)/node_modules/.package-lock.json: $(JS_INTEROP)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  echo "==> npm ci --prefix $(JS_INTEROP)"; \
	  npm ci --prefix $(JS_INTEROP) --no-audit --no-fund --loglevel=error; \
	else echo "==> npm not found: the JS SDK interop tests will skip"; fi

test: $(VENV)/.installed-dev $(JS_INTEROP)/node_modules/.package-lock.json
	$(PY) -m pytest $(PYTEST_ARGS)

test-thirdparty: $(VENV)/.installed-thirdparty
	$(PY) -m pytest -n auto -m "not slow and ($(THIRDPARTY))"

demo: $(VENV)/.installed-viewer
	$(VENV)/bin/otel-inputs demo --out demo-data --port $(PORT)

bench: venv
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .tools demo-data .pytest_cache

screenshots: venv
	$(PY) scripts/screenshots.py --out docs/images

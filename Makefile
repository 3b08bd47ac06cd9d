VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
# `make test` is the suite a newcomer runs, on both cores: everything but the long soak and
# campaign runs (`slow`) and the heavy third-party suites, which `make test-thirdparty` runs (CI
# runs both; see .ci/run).
THIRDPARTY := phoenix or frameworks or coding_agents
PYTEST_ARGS ?= -n auto -m "not slow and not ($(THIRDPARTY))"
JS_INTEROP := tests/interop/js
# The agent frameworks pin OpenTelemetry below what the rest needs, so they get a venv of their own.
FW_VENV := .venv-frameworks
NPM_SUITES := tests/coding_agents tests/frameworks/js

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

$(FW_VENV)/.installed: pyproject.toml scripts/venv.sh
	@scripts/venv.sh $(FW_VENV) dev,clickhouse,frameworks
	@touch $@

venv: $(VENV)/.installed-dev

# npm packages a suite pins in its package-lock.json (the OpenTelemetry JS SDK for tests/interop;
# the coding-agent CLIs and the Vercel AI SDK for make test-thirdparty); without npm those tests
# skip and say why.
%/node_modules/.package-lock.json: %/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  echo "==> npm ci --prefix $*"; \
	  npm ci --prefix $* --no-audit --no-fund --loglevel=error; \
	else echo "==> npm not found: the tests that need $* will skip"; fi

test: $(VENV)/.installed-dev $(JS_INTEROP)/node_modules/.package-lock.json
	$(PY) -m pytest $(PYTEST_ARGS)

test-thirdparty: $(VENV)/.installed-thirdparty $(FW_VENV)/.installed \
		$(foreach d,$(NPM_SUITES),$(d)/node_modules/.package-lock.json)
	$(PY) -m pytest -n auto -m "not slow and (phoenix or coding_agents)"
	$(FW_VENV)/bin/python -m pytest -n auto -m "not slow and frameworks" tests/frameworks

demo: $(VENV)/.installed-viewer
	$(VENV)/bin/otel-inputs demo --out demo-data --port $(PORT)

bench: venv
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) $(FW_VENV) .tools demo-data .pytest_cache

screenshots: venv
	$(PY) scripts/screenshots.py --out docs/images

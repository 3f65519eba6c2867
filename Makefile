# longpipe — `make demo` and `make test` set everything up on a fresh machine.
SHELL := /bin/bash
.DEFAULT_GOAL := demo
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
export PIP_DISABLE_PIP_VERSION_CHECK := 1
RUST_SRC := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml pyproject.toml

.PHONY: demo test bench lint setup system-deps build clean

system-deps: ## tshark (pcap checks); apt-get only when it is missing
	@if ! command -v tshark >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing tshark"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark >/dev/null; \
	  else echo "warning: tshark missing and not root; pcap tests will be skipped"; fi; \
	fi

$(VENV)/.deps: requirements-dev.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q -r requirements-dev.txt
	touch $@

$(VENV)/.built: $(VENV)/.deps $(RUST_SRC)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/maturin develop --release -q
	touch $@

build: $(VENV)/.built
setup: system-deps build

demo: setup ## compare Tahoe, Reno and NewReno on the GEO example; table + PNG
	mkdir -p out
	$(PY) -m longpipe compare examples/geo.toml --tcp tahoe,reno,newreno --plot out/geo-compare.png

test: setup ## Rust tests, then Python tests
	cargo test -p longpipe-core --release -q
	$(PY) -m pytest -q

bench: setup ## speed figures for BENCHMARKS.md
	cargo build -p longpipe-core --release --example bench -q
	$(PY) benches/run.py
	$(PY) benches/cli_startup.py

lint: $(VENV)/.deps ## ruff, mypy --strict, rustfmt, clippy; fails on the first that fails
	$(VENV)/bin/ruff check python tests benches examples
	$(VENV)/bin/mypy
	cargo fmt --all --check
	cargo clippy --workspace --release -q -- -D warnings

clean:
	rm -rf $(VENV) target out

# longpipe — `make demo` and `make test` set everything up on a fresh machine.
SHELL := /bin/bash
.DEFAULT_GOAL := demo
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
export PIP_DISABLE_PIP_VERSION_CHECK := 1
RUST_SRC := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml pyproject.toml

.PHONY: demo test bench lint setup system-deps build clean fuzz mutants

system-deps: ## tshark (pcap checks), iproute2 (longpipe emu), nftables (gateway split mode); apt-get only when one is missing
	@missing=""; \
	command -v tshark >/dev/null 2>&1 || missing="$$missing tshark"; \
	command -v ip >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || missing="$$missing nftables"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "warning:$$missing missing and not root; pcap and emulation tests will be skipped"; fi; \
	fi

$(VENV)/.deps: requirements-dev.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q -r requirements-dev.txt
	touch $@

$(VENV)/.built: $(VENV)/.deps $(RUST_SRC)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/maturin develop --release -q
	$(PY) -m longpipe._typegen  # python/longpipe/_results.py from the result schema
	cargo build -p longpipe-emu -p longpipe-gateway --release -q
	touch $@

# The package's bytecode, written ahead: where PYTHONDONTWRITEBYTECODE is set (as on
# this project's machines) every start would compile longpipe's modules again, about
# 16 ms of a short `longpipe run` (BENCHMARKS.md, CLI start-up). Stale files are
# ignored by Python (it checks each source's size and time), never wrong.
build: $(VENV)/.built
	$(PY) -m compileall -q python/longpipe
setup: system-deps build

demo: setup ## compare CUBIC, BBR and Hybla on the GEO example, all on the Linux profile; table + PNG
	mkdir -p out
	$(PY) -m longpipe compare examples/geo.toml --tcp cubic,bbr,hybla --plot out/geo-compare.png

# Fuzzing: `make test` replays the committed corpus (fuzz/corpus/) and mutates it for
# LONGPIPE_FUZZ_SECS seconds per target (stable toolchain, the targets in parallel);
# `make fuzz` runs long coverage-guided sessions. Memory is capped so that a runaway
# input cannot exhaust the machine.
LONGPIPE_FUZZ_SECS ?= 10
FUZZ_SECS ?= 600
FUZZ_MEM_KB ?= 8000000

test: setup ## Rust tests, fuzz targets (bounded), then Python tests
	cargo test -p longpipe-core --profile fasttest -q
	cargo test -p longpipe-sys --profile fasttest -q
	cargo test -p longpipe-emu --profile fasttest -q
	cargo test -p longpipe-gateway --profile fasttest -q
	cargo test -p longpipe-py --profile fasttest -q
	cargo test -p longpipe-fuzz --profile fasttest -q --no-run
	( ulimit -v $(FUZZ_MEM_KB); LONGPIPE_FUZZ_SECS=$(LONGPIPE_FUZZ_SECS) cargo test -p longpipe-fuzz --profile fasttest -q -- --nocapture )
	$(PY) -m pytest -q

fuzz: setup ## long fuzz runs (FUZZ_SECS per target): cargo-fuzz on nightly if present, else the stable loop
	@if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then \
	  cargo fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked -q; \
	  cd fuzz && for t in scenario wire gateway; do \
	    ( ulimit -v 20000000; cargo +nightly fuzz run -s none $$t corpus/$$t -- \
	        -max_total_time=$(FUZZ_SECS) -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 ) || exit 1; \
	  done; \
	else \
	  echo "no nightly toolchain: stable mutation loop (no coverage feedback)"; \
	  for t in scenario wire gateway; do \
	    ( ulimit -v $(FUZZ_MEM_KB); cargo run -p longpipe-fuzz --release -q -- $$t $(FUZZ_SECS) ) || exit 1; \
	  done; \
	fi
	LONGPIPE_HYPOTHESIS_EXAMPLES=3000 LONGPIPE_HYPOTHESIS_STORE_EXAMPLES=3000 \
	  $(PY) -m pytest -q -s tests/test_fuzz_cli.py tests/test_fuzz_store.py

bench: setup ## speed figures for BENCHMARKS.md
	cargo build -p longpipe-core --release --example bench -q
	cargo run -p longpipe-gateway --release -q --example gateway_bench
	$(PY) benches/run.py
	$(PY) benches/cli_startup.py
	@if [ "$$(id -u)" = 0 ]; then target/release/longpipe-emu selftest; \
	else echo "longpipe emu --selftest needs root: skipped"; fi
	@if [ "$$(id -u)" = 0 ]; then $(PY) benches/gateway_tun.py --nice -10; \
	else echo "benches/gateway_tun.py (the gateway daemon through TUN devices) needs root: skipped"; fi

MUTANTS_FILES ?= crates/longpipe-core/src/tcp/**/*.rs
# e.g. MUTANTS_ARGS='--shard 0/30 --sharding round-robin' for a 1/30 sample (docs/notes/mutation-testing.md)
MUTANTS_ARGS ?=
mutants: ## mutation testing of tcp/ (cargo-mutants; hours): survivors in mutants.out/missed.txt
	command -v cargo-mutants >/dev/null || cargo install cargo-mutants --locked
	cargo mutants -p longpipe-core --profile mutants -f '$(MUTANTS_FILES)' --timeout 300 -j 1 $(MUTANTS_ARGS)

lint: $(VENV)/.built ## ruff, mypy --strict, stubtest, rustfmt, clippy; fails on the first that fails
	$(VENV)/bin/ruff check python tests benches examples
	$(VENV)/bin/mypy
	$(PY) -m longpipe._typegen --check
	$(VENV)/bin/stubtest longpipe._core longpipe._results
	cargo fmt --all --check
	cargo clippy --workspace --release -q -- -D warnings

clean:
	rm -rf $(VENV) target out

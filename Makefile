# alcc: `make demo` runs the main job, `make test` runs every test.
CARGO ?= cargo
export ALCC_TRACE_DIR ?= $(abspath ../shared/traces)

.PHONY: setup build test lint fmt bench demo clean

setup:
	./scripts/setup.sh

build: setup
	$(CARGO) build --release --workspace

lint: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The 1000-flow test needs about three descriptors per flow.
test: lint
	ulimit -n "$$(ulimit -Hn)"; $(CARGO) test --workspace --release

bench: setup
	$(CARGO) bench --workspace

# The main job: the controllers against CUBIC on the project's synthetic cellular trace.
demo: build
	./scripts/demo.sh

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean

# alcc: `make demo` runs the main job, `make test` runs every test.
CARGO ?= cargo
# ../shared (traces, the authors' programs) lies beside the main checkout. A git worktree may sit
# elsewhere (/work/wt/NAME), so the main checkout is the folder holding the common .git; outside
# git (an unpacked tarball), this folder.
GIT_COMMON := $(shell git -C $(CURDIR) rev-parse --path-format=absolute --git-common-dir 2>/dev/null)
CHECKOUT := $(if $(filter %/.git,$(GIT_COMMON)),$(patsubst %/.git,%,$(GIT_COMMON)),$(CURDIR))
export ALCC_TRACE_DIR ?= $(abspath $(CHECKOUT)/../shared/traces)
export ALCC_REFS_SRC ?= $(abspath $(CHECKOUT)/../shared/refs)

.PHONY: setup build python-ext python-docs refs test lint fmt bench demo clean fuzz-quick fuzz

setup:
	./scripts/setup.sh

# The Java client library and uploader (java/): Maven, JUnit 5, checked against Android API 21.
MVN ?= mvn -B -q

build: setup python-ext
	$(CARGO) build --release --workspace
	./scripts/video-media.sh target/release/video
	cd java && $(MVN) package -DskipTests

# The `alcc` Python package (crates/alcc-py: PyO3 + maturin, abi3) into .venv, built in release.
# `pip install ./crates/alcc-py` builds the same as a wheel anywhere. PYO3_BUILD_EXTENSION_MODULE
# (which maturin >= 1.9 sets itself) leaves libpython unlinked, as an extension module must.
python-ext: setup
	PYO3_BUILD_EXTENSION_MODULE=1 VIRTUAL_ENV=$(abspath .venv) .venv/bin/maturin develop --release --quiet -m crates/alcc-py/Cargo.toml

# The `alcc` Python package's API reference, generated from its docstrings by pdoc (HTML, one
# page, searchable) into target/python-docs; python/tests/test_api_docs.py checks every public
# name has a docstring and a section.
python-docs: python-ext
	.venv/bin/python -m pdoc alcc -o target/python-docs
	@echo "open target/python-docs/alcc.html"

# The authors' Verus, Copa and Sprout (the ref-X schemes), built from their tarballs in
# $(ALCC_REFS_SRC) into target/refs; setup.sh installs their build dependencies.
refs:
	./scripts/setup.sh refs
	./scripts/refs.sh

lint: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	.venv/bin/ruff check --config python/pyproject.toml python crates/alcc-py/python examples/python bench/python-callback.py
	.venv/bin/ruff format --check --config python/pyproject.toml python crates/alcc-py/python examples/python bench/python-callback.py

# The authors' programs (make refs) for the short runs of ref-copa, ref-verus and ref-sprout in
# alcc-cli's experiment tests. scripts/test.sh: the Rust tests, the report's (one runs a short
# experiment through the emulator), the Java library's, the paper's experiment in its --quick
# form rendered in headless Chromium, and last a line listing every skipped test and why
# (under CI=true, as .ci/run sets, a skip is a failure).
test: lint refs python-ext fuzz-quick
	CARGO="$(CARGO)" MVN="$(MVN)" ./scripts/test.sh

# The cargo-fuzz targets (fuzz/README.md) on stable Rust: 5 s each in make test, 5 minutes each
# in `make fuzz` (at nice 19; the long run's figures are in fuzz/README.md).
fuzz-quick:
	./scripts/setup.sh fuzz
	./scripts/fuzz.sh --quick

fuzz:
	./scripts/setup.sh fuzz
	nice -n 19 ./scripts/fuzz.sh --seconds 300

# The flows bench (10 000 flows) needs one descriptor per flow: the soft limit goes to the hard one.
bench: setup
	ulimit -n "$$(ulimit -Hn)" && $(CARGO) bench --workspace

# The main job: alcc's controllers against plain CUBIC through the emulator on the project's
# synthetic cellular trace (experiments/demo.toml), the table and report.html.
demo: build
	./scripts/demo.sh

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean

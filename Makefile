# meshplan: `make demo` and `make test` each do all the set-up on a fresh Debian machine
# (missing packages, configure, build), then run the demo or the tests. CMake does the real work.

BUILD_DIR   ?= build
BUILD_TYPE  ?= RelWithDebInfo
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
DEB_PACKAGES := build-essential cmake ninja-build pkg-config libflatbuffers-dev flatbuffers-compiler \
                libxxhash-dev libmimalloc-dev libcli11-dev doctest-dev libbenchmark-dev \
                python3-dev pybind11-dev python3-numpy python3-pytest

# The MPI mesh backend (docs/mpi.md): built and tested when CMake finds MPI.
DEB_PACKAGES += libopenmpi-dev openmpi-bin

# `make test` also needs a browser: the plan report is opened in headless Chromium.
TEST_PACKAGES := chromium

DEMO_DIR := $(BUILD_DIR)/demo

# Reliability builds: one clang ASan+UBSan build serves the whole suite (`make test-asan`) and
# the libFuzzer targets (`make fuzz`); a TSan build of the concurrency test (`make test-tsan`).
# Sanitizer builds compile at -O1 with line tables (MESHPLAN_SANITIZER_LIGHT). `make ci` runs
# all of them after `make test`.
ASAN_DIR     ?= build-asan
TSAN_DIR     ?= build-tsan
FUZZ_DIR     ?= $(ASAN_DIR)
FUZZ_SECONDS ?= 60
# clang >= 16: older clang cannot compile libstdc++ 12's std::expected (no P0848).
FUZZ_PACKAGES := clang-16 libclang-rt-16-dev
NINJA_OR_MAKE = $(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')

.PHONY: all deps test-deps configure build test demo bench format clean sanitize-configure test-asan test-tsan fuzz ci

all: build

deps:
	@./cmake/install-deps.sh $(DEB_PACKAGES)

$(BUILD_DIR)/CMakeCache.txt:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(BUILD_DIR) -G "$(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" \
	  -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: deps $(BUILD_DIR)/CMakeCache.txt

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test-deps:
	@./cmake/install-deps.sh $(TEST_PACKAGES)

test: build test-deps
	MESHPLAN_REQUIRE_CHROMIUM=1 ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) -V

demo: build
	@mkdir -p $(DEMO_DIR)
	@rm -f $(DEMO_DIR)/plans.mpc
	$(BUILD_DIR)/planner/meshplan-compile examples/models/mlp.json -o $(DEMO_DIR)/plans.mpc --name mlp
	$(BUILD_DIR)/examples/meshplan-demo $(DEMO_DIR)/plans.mpc mlp
	$(BUILD_DIR)/examples/meshplan-zoo --cache $(DEMO_DIR)/zoo.mpc

BENCH_DIR := $(BUILD_DIR)/bench

bench: build
	@mkdir -p $(BENCH_DIR)
	MESHPLAN_RATIOS_JSON=$(BENCH_DIR)/ratios.json $(BUILD_DIR)/tests/bench/meshplan_bench \
	  --benchmark_out=$(BENCH_DIR)/benchmarks.json --benchmark_out_format=json
	$(BUILD_DIR)/examples/meshplan-zoo --cache $(BENCH_DIR)/zoo.mpc --no-run --bench-json $(BENCH_DIR)/policies.json
	cmake -DBENCH=$(BENCH_DIR) -P cmake/BenchReport.cmake
	@cat $(BENCH_DIR)/results.md

# Installs clang-16 if missing (as root).
sanitize-configure:
	@./cmake/install-deps.sh $(DEB_PACKAGES) $(FUZZ_PACKAGES)
	CC=clang-16 CXX=clang++-16 cmake -S . -B $(ASAN_DIR) -G "$(NINJA_OR_MAKE)" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DMESHPLAN_SANITIZE=ON -DMESHPLAN_LIBFUZZER=ON -DMESHPLAN_BUILD_BENCH=OFF

test-asan: sanitize-configure
	cmake --build $(ASAN_DIR) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS)

# ThreadSanitizer: 8 threads looking up and running plans while a writer replaces the cache.
test-tsan: deps
	cmake -S . -B $(TSAN_DIR) -G "$(NINJA_OR_MAKE)" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHPLAN_TSAN=ON -DMESHPLAN_BUILD_BENCH=OFF
	cmake --build $(TSAN_DIR) -j $(JOBS) --target concurrency_tests
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(TSAN_DIR)/tests/concurrency_tests --test-case='8 threads*'

# libFuzzer runs of FUZZ_SECONDS per target from the seed corpus, with ASan+UBSan, in the
# test-asan build (built here if `make test-asan` has not run); the GCC build's fuzz_smoke_*
# tests cover the targets without clang.
fuzz:
	$(MAKE) --no-print-directory sanitize-configure ASAN_DIR=$(FUZZ_DIR)
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target plan_cache_fuzz graph_json_fuzz stablehlo_fuzz meshplan_fuzz_corpus
	rm -rf $(FUZZ_DIR)/run && mkdir -p $(FUZZ_DIR)/run/cache $(FUZZ_DIR)/run/graph $(FUZZ_DIR)/run/stablehlo
	cp $(FUZZ_DIR)/tests/fuzz/corpus/cache/*.mpc $(FUZZ_DIR)/run/cache/
	cp tests/fuzz/corpus/graph/*.json $(FUZZ_DIR)/run/graph/
	cp tests/fuzz/corpus/stablehlo/*.mlir tests/planner/golden/*.mlir examples/models/*.mlir $(FUZZ_DIR)/run/stablehlo/
	$(FUZZ_DIR)/tests/fuzz/plan_cache_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 $(FUZZ_DIR)/run/cache
	$(FUZZ_DIR)/tests/fuzz/graph_json_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -timeout=10 $(FUZZ_DIR)/run/graph
	$(FUZZ_DIR)/tests/fuzz/stablehlo_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -timeout=10 $(FUZZ_DIR)/run/stablehlo

ci: test test-asan test-tsan fuzz

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(TSAN_DIR) $(FUZZ_DIR) build-fuzz

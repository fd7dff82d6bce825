# meshplan: `make demo` and `make test` each do all the set-up on a fresh Debian machine
# (missing packages, configure, build), then run the demo or the tests. CMake does the real work.

BUILD_DIR   ?= build
BUILD_TYPE  ?= RelWithDebInfo
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
DEB_PACKAGES := build-essential cmake ninja-build pkg-config libflatbuffers-dev flatbuffers-compiler \
                libxxhash-dev libmimalloc-dev doctest-dev libbenchmark-dev

DEMO_DIR := $(BUILD_DIR)/demo

.PHONY: all deps configure build test demo bench format clean

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

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) -V

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

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	rm -rf $(BUILD_DIR)

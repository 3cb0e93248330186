# The README's two commands. Each does all set-up on a fresh Debian machine:
# missing packages, models, test data, configure, build.
#   make run    run omma on its built-in default (optimized build, build-release)
#   make test   build and run the whole test suite (CTest; sanitizers, build)
# Without the CUDA toolkit both build the CPU backend only; OMMA_CUDA=OFF in
# the flags forces that (make test-nocuda: the suite of that build).
BUILD ?= build
RUN_BUILD ?= build-release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DOMMA_WERROR=ON -DOMMA_SANITIZE=ON -DOMMA_FAULT_INJECTION=ON
RUN_CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release
NOCUDA_BUILD ?= build-nocuda
PREFIX ?= /usr/local

.PHONY: all setup deps data configure build run test test-nocuda install fuzz clean

all: build

deps:
	@scripts/install-deps.sh

data: deps
	@scripts/fetch-models.sh
	@scripts/fetch-testdata.sh

setup: deps data

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# make run: an optimized build of its own (no sanitizers).
$(RUN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(RUN_BUILD) $(RUN_CMAKE_FLAGS)

run: setup $(RUN_BUILD)/CMakeCache.txt
	cmake --build $(RUN_BUILD) -j $(JOBS)
	@scripts/run-default.sh $(RUN_BUILD)/omma

# make test: CTest's exit status, after one line per skipped test and why.
CTEST_ARGS ?=
test: setup build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS) --output-junit ctest-junit.xml; rc=$$?; \
	    cd $(CURDIR) && scripts/test-skips.sh $(BUILD)/ctest-junit.xml; exit $$rc

# The suite of the build without CUDA (CPU backend only; GPU tests skip).
# The tests labelled slow (the cluster, the two-person participants video,
# the CPU pipeline's threads, the recorder, network cameras, NATS and MQTT
# sinks, the fetch scripts, the browser test of the live view,
# the Python package's suite: nothing in them differs without CUDA) run
# once, in make test.
test-nocuda:
	$(MAKE) test BUILD=$(NOCUDA_BUILD) CMAKE_FLAGS="$(CMAKE_FLAGS) -DOMMA_CUDA=OFF -DOMMA_TEST_FUZZ=OFF" \
	    CTEST_ARGS="-LE slow"

# Installs the libraries, headers, omma, omma.pc and the CMake package
# under PREFIX, from the optimized build.
install: deps $(RUN_BUILD)/CMakeCache.txt
	cmake --build $(RUN_BUILD) -j $(JOBS)
	cmake --install $(RUN_BUILD) --prefix $(PREFIX)

# Fuzz the TFLite reader, the image decoders, the bus messages, the video
# reader, the LSL parsers, the cluster values and the Annex B converter with libFuzzer (clang),
# FUZZ_SECONDS each.
FUZZ_SECONDS ?= 60
fuzz: data
	@mkdir -p $(BUILD)
	@fuzz/run.sh $(CURDIR) $(abspath $(BUILD)) $(FUZZ_SECONDS) tflite
	@fuzz/run.sh $(CURDIR) $(abspath $(BUILD)) $(FUZZ_SECONDS) image
	@fuzz/run.sh $(CURDIR) $(abspath $(BUILD)) $(FUZZ_SECONDS) bus
	@fuzz/run.sh $(CURDIR) $(abspath $(BUILD)) $(FUZZ_SECONDS) video
	@fuzz/run.sh $(CURDIR) $(abspath $(BUILD)) $(FUZZ_SECONDS) lsl
	@fuzz/run.sh $(CURDIR) $(abspath $(BUILD)) $(FUZZ_SECONDS) geometry
	@fuzz/run.sh $(CURDIR) $(abspath $(BUILD)) $(FUZZ_SECONDS) ui
	@fuzz/run.sh $(CURDIR) $(abspath $(BUILD)) $(FUZZ_SECONDS) record
	@fuzz/run.sh $(CURDIR) $(abspath $(BUILD)) $(FUZZ_SECONDS) cluster
	@fuzz/run.sh $(CURDIR) $(abspath $(BUILD)) $(FUZZ_SECONDS) annexb

clean:
	rm -rf $(BUILD) $(RUN_BUILD) $(NOCUDA_BUILD)

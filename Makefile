# The README's two commands. Each does all set-up on a fresh Debian machine:
# missing packages, models, test data, configure, build.
#   make run    run omma on its built-in default
#   make test   build and run the whole test suite (CTest)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DOMMA_WERROR=ON -DOMMA_SANITIZE=ON

.PHONY: all setup deps data configure build run test fuzz clean

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

run: setup build
	@scripts/run-default.sh $(BUILD)/omma

test: setup build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Fuzz the TFLite reader and the image decoders with libFuzzer (clang),
# FUZZ_SECONDS each.
FUZZ_SECONDS ?= 60
fuzz: data
	@mkdir -p $(BUILD)
	@fuzz/run.sh $(CURDIR) $(abspath $(BUILD)) $(FUZZ_SECONDS) tflite
	@fuzz/run.sh $(CURDIR) $(abspath $(BUILD)) $(FUZZ_SECONDS) image
	@fuzz/run.sh $(CURDIR) $(abspath $(BUILD)) $(FUZZ_SECONDS) bus

clean:
	rm -rf $(BUILD)

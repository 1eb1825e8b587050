# The two commands of the README:
#   make run   installs what is missing, builds (Release), simulates the default model and plots it
#   make test  installs what is missing, builds, runs every test with ctest
BUILD    ?= build
JOBS     ?= $(shell nproc)
MODEL    ?= models/four_bar.json
OUTPUT   ?= results/$(basename $(notdir $(MODEL)))
CMAKE_FLAGS ?=

.PHONY: all deps configure build run test bench clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) > $(BUILD).configure.log 2>&1 \
	  || { cat $(BUILD).configure.log; exit 1; }

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/treedyn simulate $(MODEL) --output $(OUTPUT) --plot

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	$(BUILD)/bench/treedyn_bench

clean:
	rm -rf $(BUILD) $(BUILD).configure.log

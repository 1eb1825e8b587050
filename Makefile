# The two commands of the README:
#   make run   installs what is missing, builds (Release), makes `import treedyn` work, simulates
#              the default model, plots it and writes its 3-D viewer page (viewer.html)
#   make test  installs what is missing, builds, runs every test with ctest
# and the rest:
#   make install PREFIX=dir   headers, libtreedyn, the treedyn command, CMake package, pkg-config
#   make sanitize             the C++ test suite built and run under AddressSanitizer and
#                             UndefinedBehaviorSanitizer (build-sanitize/), but for the long
#                             scenarios tests/schedule/schedule.cmake leaves out there
#   make bench                the micro-benchmarks (figures in docs/benchmarks.md)
BUILD    ?= build
JOBS     ?= $(shell nproc)
MODEL    ?= models/four_bar.json
OUTPUT   ?=
PREFIX   ?= /usr/local
CMAKE_FLAGS ?=
SANITIZE_BUILD ?= build-sanitize

.PHONY: all deps configure build python run test install sanitize bench clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) > $(BUILD).configure.log 2>&1 \
	  || { cat $(BUILD).configure.log; exit 1; }

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# `import treedyn` from any directory, with the package the build assembled (scripts/install-python.sh)
python: build
	@scripts/install-python.sh $(BUILD)/python

run: python
	$(BUILD)/treedyn simulate $(MODEL) $(if $(OUTPUT),--output $(OUTPUT)) --plot --view

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# The Python package is left out (an ASan-built extension cannot load into an uninstrumented
# interpreter); its C++ below is the library the sanitized tests cover. -O1 keeps the sanitized
# tests fast enough to run; -g1 (line tables: the reports still name file
# and line) halves the compile time of the divide-and-conquer kernels, whose variable tracking
# under -g is most of it (src/dc/dc_double6.cpp: 465 s with -g, 222 s with -g1 on the 2-core
# development VM). The benchmarks are left out.
sanitize: deps
	@cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
	  -DTREEDYN_SANITIZE=address,undefined -DTREEDYN_BUILD_BENCH=OFF -DTREEDYN_BUILD_PYTHON=OFF \
	  > $(SANITIZE_BUILD).configure.log 2>&1 \
	  || { cat $(SANITIZE_BUILD).configure.log; exit 1; }
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	cd $(SANITIZE_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

bench: build
	$(BUILD)/bench/treedyn_bench

clean:
	rm -rf $(BUILD) $(BUILD).configure.log $(SANITIZE_BUILD) $(SANITIZE_BUILD).configure.log

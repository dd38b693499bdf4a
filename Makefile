# fedc — the README's commands. Everything sets itself up first (scripts/install-deps).
#
#   make demo     build, then train the example model and report its loss
#   make test     build and run the whole suite twice: Release, then Debug with
#                 AddressSanitizer + UndefinedBehaviorSanitizer; also compile with clang
#   make bench    build in Release and run the benchmarks in bench/
#   make install  install headers, libraries, fedc.pc and the fedc binary (PREFIX=/usr/local)

PREFIX ?= /usr/local
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps build build-asan build-clang test test-release test-asan demo bench install clean

all: build

deps:
	@./scripts/install-deps

build/CMakeCache.txt:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

build: deps build/CMakeCache.txt
	cmake --build build -j $(JOBS)

build-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DFEDC_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS)

build-clang: deps
	CC=clang cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build build-clang -j $(JOBS)

test-release: build
	cd build && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS)

test: test-release test-asan build-clang
	@echo "make test: Release and ASan+UBSan suites passed; clang build clean"

demo: build
	./build/example_mlp

bench: build
	./bench/run

install: build
	cmake -S . -B build -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build build -j $(JOBS)
	cmake --install build

clean:
	rm -rf build build-asan build-clang

# fedc — the README's commands. Everything sets itself up first (scripts/install-deps).
#
#   make demo     build, then train a CNN with FedAvg on Fashion-MNIST over 100 clients
#   make test     build and run the whole suite twice: Release, then Debug (asserts on, at -O1)
#                 with AddressSanitizer + UndefinedBehaviorSanitizer; also compile with clang and
#                 check that its build writes the same programs as gcc's (test-compilers);
#                 then fuzz every file reader for ~10 s each (test-fuzz), then the peer tests
#   make test-peers  install the peers (scripts/install-peers: JAX, XLA, IREE, FedJAX, DrJAX, Flower
#                 in .peers/) and run the peer tests, ctest's peers_* (docs/export.md)
#   make fuzz     fuzz every file reader longer: FUZZ_SECONDS each (docs/fuzzing.md)
#   make bench    build in Release and run the benchmarks in bench/
#   make bench-peers  install the peers (PyTorch 2, FedJAX, pfl-research, Flower: scripts/install-peers
#                 torch pfl) and time fedc against them on issue 42's workloads 1 and 2
#                 (bench/peers/run; BENCH_PEERS_FLAGS=--quick for 2 rounds)
#   make install  install headers, libraries, their .pc files and the fedc binary (PREFIX=/usr/local)

PREFIX ?= /usr/local
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps build build-asan build-clang test test-release test-asan test-compilers test-peers demo bench bench-peers install clean

all: build

deps:
	@./scripts/install-deps

build/CMakeCache.txt:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

build: deps build/CMakeCache.txt
	cmake --build build -j $(JOBS)

# -O1, not Debug's -O0: the sanitizers check the same, and the suite takes half the CPU time
# (the training scripts dominate it).
build-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-O1 -g" -DFEDC_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS)

build-clang: deps
	CC=clang cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build build-clang -j $(JOBS)

# The peer tests (peers_*) run once, in test-peers, after installing the peers.
test-release: build
	cd build && ctest --output-on-failure -j $(JOBS) -E '^peers_'

test-asan: build-asan
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -E '^peers_'

# gcc's and clang's builds write the same programs (plans, their hashes, MLIR)
test-compilers: build build-clang
	sh tests/compilers_agree.sh build/fedc build-clang/fedc || { s=$$?; [ $$s = 77 ] && echo "test-compilers: SKIPPED (no python3)"; [ $$s = 77 ]; }

test: test-release test-asan build-clang test-compilers test-fuzz test-peers
	@echo "make test: Release and ASan+UBSan suites passed; clang build clean and agrees with gcc's; peer tests run"

# The peers, from the Python Package Index (scripts/install-peers). Where pip cannot reach
# it, install-peers says so and the peers_* tests report a skip, not a pass.
test-peers: build
	./scripts/install-peers || echo "test-peers: the peers are not installed; the peers_* tests will skip"
	cd build && ctest --output-on-failure -R '^peers_'

# The demo: FedAvg trains the CNN on Fashion-MNIST (Debian's dataset-fashion-mnist)
# split over 100 clients by Dirichlet(0.5), 10 clients a round, about two minutes.
DEMO_DATA ?= /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
demo: build
	./build/fedc train --data $(DEMO_DATA) --partition dirichlet:0.5 --num-clients 100 \
	  --model cnn --algorithm fedavg --rounds 12 --clients-per-round 10 --batch-size 20 \
	  --client-lr 0.05 --eval-every 4 --threads $(JOBS) --out demo-run

bench: build
	@./scripts/install-bench-deps
	./bench/run

# A peer that cannot be installed is listed as such in the table, not timed.
bench-peers: build
	./scripts/install-bench-deps || echo "bench-peers: Debian's PyTorch 1.13 is not installed; the table says so"
	./scripts/install-peers torch pfl || echo "bench-peers: some peers are not installed; the table says which"
	./bench/peers/run $(BENCH_PEERS_FLAGS)

install: build
	cmake -S . -B build -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build build -j $(JOBS)
	cmake --install build

clean:
	rm -rf build build-asan build-clang build-fuzz

# Fuzzing (docs/fuzzing.md): libFuzzer harnesses in fuzz/, built by clang with
# ASan + UBSan in build-fuzz. A finding fails the target.
FUZZ_SECONDS ?= 300
.PHONY: build-fuzz test-fuzz fuzz
build-fuzz: deps
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFEDC_FUZZ=ON $(CMAKE_FLAGS)
	cmake --build build-fuzz -j $(JOBS) --target fuzz_all

test-fuzz: build-fuzz
	./fuzz/run build-fuzz 10

fuzz: build-fuzz
	./fuzz/run build-fuzz $(FUZZ_SECONDS)

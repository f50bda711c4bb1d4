# The two commands: `make demo` and `make test`. Each installs missing Debian packages,
# configures, builds and runs. Everything else is a convenience on top.
PRESET ?= ci
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)

.PHONY: all deps configure build demo test test-slow test-sanitize test-tsan fuzz bench format lint clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)/src/cli/tapestry

test: build
	@cd $(BUILD) && ctest -LE slow --output-on-failure -j $(JOBS)

# Tests labelled `slow` (long property runs, fuzzing).
test-slow: build
	@cd $(BUILD) && ctest -L slow --output-on-failure -j $(JOBS)

# The whole default suite under ASan + UBSan.
test-sanitize:
	@$(MAKE) --no-print-directory test PRESET=dev

# The block executor's tests (ctest label `executor`; they run the fast kernels on several
# threads too) under ThreadSanitizer.
test-tsan: deps
	@cmake --preset tsan >/dev/null
	@cmake --build build/tsan -j $(JOBS) --target runtime_block_executor_test
	@cd build/tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	  ctest -L executor --output-on-failure -j $(JOBS)

# The libFuzzer harnesses of tests/fuzz (clang 14, ASan + UBSan), each run for FUZZ_SECONDS
# (default 60) in turn; FUZZ_TARGETS="tap npy" runs some. See docs/reliability.md.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz:
	@scripts/install-deps.sh --fuzz
	@cmake --preset fuzz >/dev/null
	@cmake --build build/fuzz -j $(JOBS) --target fuzz_harnesses
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh build/fuzz $(FUZZ_TARGETS)

bench:
	@$(MAKE) --no-print-directory build PRESET=release
	@scripts/bench.sh build/release

format:
	@git ls-files '*.h' '*.cpp' | xargs clang-format -i

lint: configure
	@scripts/lint.sh $(BUILD)

clean:
	rm -rf build

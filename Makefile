# The two commands: `make demo` and `make test`. Each installs missing Debian packages,
# configures, builds and runs. Everything else is a convenience on top.
PRESET ?= ci
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)

.PHONY: all deps configure build demo test test-slow test-variants test-sanitize test-sanitize-quick test-tsan fuzz bench format lint clean

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

# The numerics-sensitive tests (the runtime's kernel tests, fast kernels, block executor,
# verifier, doc transcripts, the CLI's verify, fast-path and example checks, Python against the
# CLI) again under two other choices of GEMM kernels: OpenBLAS's Haswell kernels with a 512 KiB L2
# (what AMD EPYC machines may set) and oneDNN limited to AVX2 (this CPU has AVX-512). A test that
# asserts the bits of one kernel choice fails here. `make test` keeps whatever the user's
# environment sets; these runs set their own.
NUMERICS_TESTS := ^(runtime_test|runtime_fast_kernels_test|runtime_block_executor_test|verify_test|docs_test)\.|^cli\.(verify|fast_paths|examples)$$|^python\.(test_examples|test_run)$$
test-variants: build
	@cd $(BUILD) && OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512 \
	  ctest -R '$(NUMERICS_TESTS)' -LE slow --output-on-failure -j $(JOBS)
	@cd $(BUILD) && ONEDNN_MAX_CPU_ISA=AVX2 \
	  ctest -R '$(NUMERICS_TESTS)' -LE slow --output-on-failure -j $(JOBS)

# The whole default suite under ASan + UBSan.
test-sanitize:
	@$(MAKE) --no-print-directory test PRESET=dev

# ASan + UBSan on the runtime's unit tests (kernels, executors, plugins, the block executor's
# threads) and the replay of every loader's fuzz seeds and findings: the part of
# `make test-sanitize` that compiles in a fraction of its time; CI runs it (.ci/run).
SANITIZE_QUICK_RUNTIME := runtime_test runtime_metakernel_test runtime_fast_kernels_test \
  runtime_block_executor_test
SANITIZE_QUICK_FUZZ := tap kernel_yaml loom_json plan target npy index_text ipf_json
SANITIZE_QUICK_TARGETS := $(SANITIZE_QUICK_RUNTIME) $(SANITIZE_QUICK_FUZZ:%=fuzz_%_replay)
empty :=
bar := $(empty)|$(empty)
SANITIZE_QUICK_TESTS := ^($(subst $(empty) $(empty),$(bar),$(SANITIZE_QUICK_RUNTIME)))\.|^fuzz_replay\.($(subst $(empty) $(empty),$(bar),$(SANITIZE_QUICK_FUZZ)))$$
test-sanitize-quick: deps
	@cmake --preset dev >/dev/null
	@cmake --build build/dev -j $(JOBS) --target $(SANITIZE_QUICK_TARGETS)
	@cd build/dev && ctest -R '$(SANITIZE_QUICK_TESTS)' -LE slow --output-on-failure -j $(JOBS)

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

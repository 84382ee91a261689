# fieldkit's front door. `make demo` and `make test` do all set-up on a fresh machine.
PRESET ?= release
# Parallel compile jobs: MAX_COMPILATION_THREADS (default = cores), never above 24;
# for every build here, the wheel's and the GPU bundle's too.
JOBS := $(shell n='$(MAX_COMPILATION_THREADS)'; [ -n "$$n" ] || n=$$(nproc); \
  if ! printf '%s' "$$n" | grep -qx '[0-9][0-9]*' || [ "$$n" -lt 1 ]; then echo bad; \
  elif [ "$$n" -gt 24 ]; then echo 24; else echo "$$n"; fi)
ifeq ($(JOBS),bad)
$(error MAX_COMPILATION_THREADS: expected a whole number of compile jobs >= 1, got '$(MAX_COMPILATION_THREADS)')
endif
BUILD_DIR := build/$(PRESET)
BIN := $(if $(filter release,$(PRESET)),build/bin,$(BUILD_DIR)/bin)

.PHONY: all bootstrap configure build test demo smoke bench asan fuzz format cuda-archs clean wheel wheel-test gpu-bundle

all: build

bootstrap:
	@scripts/bootstrap

configure: bootstrap
	@[ -f $(BUILD_DIR)/build.ninja ] || cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@ctest --test-dir $(BUILD_DIR) -j $(JOBS) --output-on-failure

# Both engines' main jobs on small CPU defaults; results land in runs/.
demo: build
	@mkdir -p runs
	@$(BIN)/fk-info > runs/fk-info.txt && echo "fk-info -> runs/fk-info.txt"
	@$(BIN)/nefi run configs/toy1d_smoke.yaml
	@$(BIN)/nefi run configs/deconvolution_smoke.yaml
	@$(BIN)/nefi run configs/thermal_tomography_smoke.yaml
	@$(BIN)/nefi run configs/poisson_source_smoke.yaml
	@$(BIN)/nefi run configs/sparse_view_ct_smoke.yaml
	@$(BIN)/nefi run configs/holography_smoke.yaml
	@$(BIN)/nefi run configs/nv_relaxometry_smoke.yaml
	@$(BIN)/nefi run configs/current_density_smoke.yaml
	@$(BIN)/nefi run configs/reaction_diffusion_smoke.yaml
	@$(BIN)/nefi run configs/diffraction_tomography_smoke.yaml
	@$(BIN)/minkowski bench conv --points 20000 --channels 32 --repeats 3 \
	  --json runs/minkowski-bench-conv-20k.json
	@PYTHONPATH=python FIELDKIT_CORE_DIR=$(BUILD_DIR)/python/fieldkit \
	  .venv/bin/python python/examples/sparse_segmentation.py
	@PYTHONPATH=python FIELDKIT_CORE_DIR=$(BUILD_DIR)/python/fieldkit \
	  .venv/bin/python python/examples/from_forward_deblur.py

# Every registered instance's smoke preset, as the reference's `make smoke`:
# runs/smoke/<instance>/, one line per instance.
smoke: build
	@for i in $$($(BIN)/nefi list instances | awk '/^  [a-z]/{print $$1}'); do \
	  $(BIN)/nefi run $$i --smoke -q --out runs/smoke/$$i && echo "$$i -> runs/smoke/$$i" || exit 1; \
	done

bench: build
	@$(BIN)/fk-info --bench-overhead | tail -4
	@$(BIN)/fk_bench
	@OMP_NUM_THREADS=1 $(BIN)/nefi_bench
	@$(BIN)/nefi profile toy1d --config configs/toy1d_smoke.yaml --threads 1
	@$(BIN)/nefi profile deconvolution --config configs/deconvolution_smoke.yaml --threads 1
	@$(BIN)/nefi profile thermal_tomography --config configs/thermal_tomography_smoke.yaml --threads 1
	@$(BIN)/minkowski bench conv --scene ../shared/data/indoor_scene_100k.npy --channels 64 --threads 1
	@$(BIN)/minkowski bench conv --scene ../shared/data/indoor_scene_100k.npy --channels 64 --threads 2

asan:
	@LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp $(MAKE) --no-print-directory test PRESET=asan

# Each libFuzzer harness (tests/fuzz/*_fuzz.cpp) for FUZZ_SECONDS, starting
# from its seeds (tests/fuzz/corpus/<name>); new inputs go to
# build/fuzz/corpus/<name>, crashes to build/fuzz/crashes/. Add a crasher to
# the seeds once fixed: `make test` replays every seed.
FUZZ_SECONDS ?= 30
FUZZ_HARNESSES := $(patsubst tests/fuzz/%_fuzz.cpp,%,$(wildcard tests/fuzz/*_fuzz.cpp))
fuzz:
	@scripts/bootstrap --fuzz
	@[ -f build/fuzz/build.ninja ] || cmake --preset fuzz >/dev/null
	@cmake --build build/fuzz -j $(JOBS) --target fuzz_harnesses
	@mkdir -p build/fuzz/crashes
	@for h in $(FUZZ_HARNESSES); do \
	  mkdir -p build/fuzz/corpus/$$h; \
	  echo "fuzz: $$h for $(FUZZ_SECONDS) s"; \
	  build/fuzz/bin/$${h}_fuzz -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix=build/fuzz/crashes/$$h- \
	    build/fuzz/corpus/$$h tests/fuzz/corpus/$$h >build/fuzz/$$h.log 2>&1; rc=$$?; \
	  grep -E "^#[0-9]+[[:space:]]+DONE|^stat::number_of_executed_units" build/fuzz/$$h.log; \
	  if [ $$rc -ne 0 ]; then tail -n 40 build/fuzz/$$h.log; exit 1; fi; \
	done

# Every CUDA architecture the release wheels target must compile (80, 90, 120).
cuda-archs: bootstrap
	@cmake -S . -B build/cuda-archs -G Ninja -DCMAKE_BUILD_TYPE=Release -DFK_CUDA_ARCHS="80;90;120" \
	  -DFK_BUILD_TESTS=OFF -DFK_BUILD_BENCHMARKS=OFF >/dev/null
	@cmake --build build/cuda-archs -j $(JOBS) --target fk_cuda minkowski_cuda nefi_cuda

# What `scripts/gpu-check --bundle` runs on a GPU machine that cannot build
# this project (the device tool's H200): the CUDA test and benchmark binaries,
# the libraries they load that such a machine lacks, and the Python module for
# its Python 3.12, in .gpu-bundle/fieldkit-gpu.tar.xz.
gpu-bundle: bootstrap
	@JOBS=$(JOBS) scripts/gpu-bundle

# The fieldkit wheel (scikit-build-core over this CMake project) with the
# build tools bootstrap put in .venv, then auditwheel's repair: the shared
# libraries it links outside the manylinux policy (OpenBLAS, FFTW, yaml-cpp,
# fmt, libgomp, libgfortran, ...) copied into the wheel with patchelf, and the
# manylinux tag of the oldest glibc its symbols allow (that of the build
# machine's toolchain: Debian 12 gives manylinux_2_35, not manylinux2014, which
# would need an older toolchain). dist/raw/ keeps the unrepaired wheel.
wheel:
	@scripts/bootstrap --wheel
	@rm -rf dist/raw && CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) .venv/bin/pip wheel --no-deps \
	  --no-build-isolation -w dist/raw .
	@PATH="$(CURDIR)/.venv/bin:$$PATH" .venv/bin/auditwheel repair -w dist dist/raw/fieldkit-*.whl

# The repaired wheel as a user gets it: installed into a fresh venv (Debian's
# torch and numpy through --system-site-packages, nothing else), then the
# Python tests run against the installed package, not the source tree (no
# PYTHONPATH; the CLI comparison uses this build's nefi).
wheel-test: wheel build
	@rm -rf build/wheel-venv && /usr/bin/python3 -m venv --system-site-packages build/wheel-venv
	@build/wheel-venv/bin/pip install -q --disable-pip-version-check --no-index --no-deps \
	  $$(ls -t dist/fieldkit-*-manylinux*.whl | head -1)
	@cd python/tests && env -u PYTHONPATH -u FIELDKIT_CORE_DIR NEFI_CLI=$(CURDIR)/build/bin/nefi \
	  OMP_NUM_THREADS=2 $(CURDIR)/build/wheel-venv/bin/python -m pytest -q -p no:cacheprovider .

format:
	@git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	@rm -rf build

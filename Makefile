# fieldkit's front door. `make demo` and `make test` do all set-up on a fresh machine.
PRESET ?= release
# Parallel compile jobs: MAX_COMPILATION_THREADS (default = cores), never above 24.
JOBS := $(shell n=$${MAX_COMPILATION_THREADS:-$$(nproc)}; [ "$$n" -gt 24 ] && n=24; echo $$n)
BUILD_DIR := build/$(PRESET)
BIN := $(if $(filter release,$(PRESET)),build/bin,$(BUILD_DIR)/bin)

.PHONY: all bootstrap configure build test demo bench asan format cuda-archs clean

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
	@$(BIN)/minkowski bench conv --points 20000 --channels 32 --repeats 3 \
	  --json runs/minkowski-bench-conv-20k.json

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
	@$(MAKE) --no-print-directory test PRESET=asan

# Every CUDA architecture the release wheels target must compile (80, 90, 120).
cuda-archs: bootstrap
	@cmake -S . -B build/cuda-archs -G Ninja -DCMAKE_BUILD_TYPE=Release -DFK_CUDA_ARCHS="80;90;120" \
	  -DFK_BUILD_TESTS=OFF -DFK_BUILD_BENCHMARKS=OFF >/dev/null
	@cmake --build build/cuda-archs -j $(JOBS) --target fk_cuda

format:
	@git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	@rm -rf build

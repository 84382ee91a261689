#!/bin/bash
# Session 28's last device check (not committed): the four suites, then the rows the last changes move.
set -u
GPU_CHECK_BENCH_MIN_TIME=0.1 scripts/gpu-check --bundle .gpu-bundle/fieldkit-gpu.tar.xz --budget 62 --pack "$OUT/gpu-check.tar.gz" > "$OUT/check.log" 2>&1
b=build/gpu-bundle
export LD_LIBRARY_PATH="$PWD/$b/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timeout 40 "$b/bin/fk_cuda_bench" --benchmark_min_time=0.1 --benchmark_filter='Add|Sum|Memcpy' > "$OUT/fk_bench.log" 2>&1
t=("$b/bin/minkowski" bench train --device cuda --points 100000 --steps 3 --threads "$(nproc)" --ops 12)
timeout 60 "${t[@]}" --precision f32 > "$OUT/train_host.log" 2>&1
timeout 40 "${t[@]}" --precision f32 --device-coords > "$OUT/train_dev.log" 2>&1
timeout 80 "$b/bin/minkowski_cuda_bench" --benchmark_min_time=0.1 --benchmark_filter='MinkUNet18Step/precision:0' > "$OUT/mink_bench.log" 2>&1
tail -3 "$OUT/check.log"; cat "$OUT/fk_bench.log" | grep BM_; head -5 "$OUT/train_host.log" | tail -1; head -5 "$OUT/train_dev.log" | tail -1; grep BM_ "$OUT/mink_bench.log"

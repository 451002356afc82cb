#!/usr/bin/env bash
# The GPU check, in one run on a machine with a CUDA GPU and CuPy already installed:
#   1. the environment (nvidia-smi, CuPy's configuration, whether the GPU backend is usable),
#   2. the GPU tests:      python -m pytest -m gpu sklearn_ilargi -q (every gpu_segment_sum setting)
#   3. the GPU benchmark:  benchmarks/gpu.py (factorized vs materialized on the GPU, GPU vs CPU,
#                          over the tuple-ratio x feature-ratio grid, segment-sum methods),
#   4. GPU calibration timings for the cost model (python -m sklearn_ilargi.calibrate, measure only).
# Everything goes to one folder (the first argument, else $OUT, else
# benchmarks/results/gpu_check), at most 8 files. Each step has a time limit so the whole check
# ends in under 8 minutes; a failing step is recorded in status.json and the check goes on. It
# installs nothing and always exits 0.
#
#   benchmarks/gpu_check.sh [OUT_DIR]
set -u
cd "$(dirname "$0")/.." || exit 0
out="${1:-${OUT:-benchmarks/results/gpu_check}}"
mkdir -p "$out"
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
summary="$out/gpu_check.log"
steps=""
check_start=$(date +%s)

log() { echo "$*" | tee -a "$summary"; }

# run_step NAME LIMIT_SECONDS LOG_FILE COMMAND...
run_step() {
  local name=$1 limit=$2 file=$3
  shift 3
  local start rc
  start=$(date +%s)
  log "== $name (limit ${limit}s): $*"
  timeout --kill-after=10 "$limit" "$@" >"$file" 2>&1
  rc=$?
  local seconds=$(( $(date +%s) - start ))
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    log "   $name: TIMED OUT after ${seconds}s (rc $rc)"
  else
    log "   $name: rc $rc in ${seconds}s"
  fi
  tail -n 25 "$file" >>"$summary"
  steps="${steps}${steps:+,}{\"step\": \"$name\", \"rc\": $rc, \"seconds\": $seconds, \"log\": \"$(basename "$file")\"}"
}

: >"$summary"
log "GPU check started $(date -u +%Y-%m-%dT%H:%M:%SZ) in $(pwd), results in $out"
{
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
  python -c "import cupy; cupy.show_config()" 2>&1 | head -n 30
  python -c "from sklearn_ilargi.backend._registry import _gpu_unavailable_reason as r; print('GPU backend:', r() or 'usable')"
} >>"$summary" 2>&1

run_step tests 200 "$out/pytest_gpu.log" \
  python -m pytest -m gpu sklearn_ilargi -q -p no:cacheprovider -rfEsx
run_step benchmark 170 "$out/gpu_benchmark.log" \
  python benchmarks/gpu.py --rows 1000000 --repeats 3 --budget 110 --out "$out"
run_step calibration 75 "$out/calibration.log" \
  python -m sklearn_ilargi.calibrate --quick --budget 40 --no-train \
  --output "$out/calibration_gpu.csv.gz"

total=$(( $(date +%s) - check_start ))
cat >"$out/status.json" <<EOF
{"started_epoch": $check_start, "seconds": $total, "steps": [$steps]}
EOF
log "GPU check finished in ${total}s; files: $(ls "$out" | tr '\n' ' ')"
exit 0

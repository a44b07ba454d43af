#!/usr/bin/env bash
# Runs `snarkctl bench pipeline` on the device machine for each shape given, one after another,
# writing <shape>.json (the report) and <shape>.log (progress) under $OUT. Built binaries come in
# devbin/ (stripped, carried); synthetic inputs and nothing else are written to $BENCH_DIR.
#   bench/pipeline.sh porep-32g:4 window-32g:1     # shape:proofs
set -u
BIN=${BIN:-devbin/snarkctl}
OUT=${OUT:-/tmp/snarkd-bench-out}
BENCH_DIR=${BENCH_DIR:-/tmp/snarkd-bench}
mkdir -p "$OUT" "$BENCH_DIR"
{ nproc; free -g; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; } > "$OUT/machine.txt" 2>&1
for item in "$@"; do
  shape=${item%%:*}; proofs=${item#*:}
  [ "$proofs" = "$item" ] && proofs=1
  echo "== $shape, $proofs proofs" | tee -a "$OUT/progress.log"
  /usr/bin/time -v "$BIN" --json bench pipeline --shape "$shape" --proofs "$proofs" --params-dir "$BENCH_DIR" \
    ${PIPELINE_ARGS:-} > "$OUT/$shape.json" 2> >(tee -a "$OUT/progress.log" > "$OUT/$shape.log")
  echo "== $shape exit $?" | tee -a "$OUT/progress.log"
done

#!/usr/bin/env bash
# Runs `snarkctl bench pipeline --shape SHAPE --proofs 1 --no-winning` for SECONDS with
# bench/threadsample.py beside it, writing under $OUT/NAME: threads.txt (the sampler's report),
# log.txt (progress, deduplicated) and time.txt (the process's rusage). A diagnostic for the
# device machine, which has no perf: where a shape's threads spend their time and what they wait on.
#   ENV="MALLOC_ARENA_MAX=8" bench/sampled.sh NAME SHAPE SECONDS
set -u
name=$1; shape=$2; t=$3
BIN=${BIN:-devbin/snarkctl}
d=$OUT/$name; mkdir -p "$d"
env ${ENV:-} /usr/bin/time -v -o "$d/time.txt" timeout "$t" "$BIN" --json bench pipeline --shape "$shape" --proofs 1 \
  --no-winning --params-dir "${BENCH_DIR:-/tmp/snarkd-bench}" > /dev/null 2> "$d/raw" &
for _ in $(seq 50); do
  pid=$(pgrep -n -f -- "^$BIN --json bench pipeline --shape $shape")
  [ -n "$pid" ] && break; sleep 0.1
done
python3 bench/threadsample.py "$pid" "$d/threads.txt"
wait
tr '\r' '\n' < "$d/raw" | grep -v '^\s*$' | awk '!seen[$0]++' | grep -v ' INFO ' > "$d/log.txt"; rm "$d/raw"

#!/usr/bin/env bash
# Soak: the full conformance run against the correct reference provider,
# N times in a row (N=20 by default). Prints each run's closing line, then
# how many were green and every failure with its run directory. Exits 0
# only when every run was green. Not part of `make test`: it is the check
# that a faster harness did not make anything flaky (docs/performance.md).
set -euo pipefail
cd "$(dirname "$0")/.."

n="${N:-20}"
if [[ ! "${n}" =~ ^[1-9][0-9]*$ ]]; then
  echo "soak: N=${n}: want a positive number of runs" >&2
  exit 2
fi
out="${SOAK_DIR:-_artifacts/soak}"
rm -rf "${out}"
mkdir -p "${out}"

green=0
failures=()
for i in $(seq 1 "${n}"); do
  dir="${out}/run-${i}"
  start=$(date +%s)
  code=0
  bin/ccm-conformance run --provider providers/profiles/reference.yaml --artifacts "${dir}" \
    >"${out}/run-${i}.log" 2>&1 || code=$?
  secs=$(( $(date +%s) - start ))
  line="$(grep -h '^conformance:' "${dir}/summary.txt" 2>/dev/null | tail -n 1 || true)"
  printf 'soak: run %d/%d: exit %d in %ds: %s\n' "${i}" "${n}" "${code}" "${secs}" "${line:-no summary}"
  if [[ "${code}" -eq 0 ]]; then
    green=$((green + 1))
  else
    failures+=("run ${i} (exit ${code}, ${dir}): $(grep -h '^FAILED\|^harness error' "${dir}/summary.txt" 2>/dev/null | head -n 5 | tr '\n' ' ')")
  fi
  if [[ "${code}" -eq 2 && ! -f "${dir}/finished.json" ]]; then
    echo "soak: run ${i} could not start; see ${out}/run-${i}.log" >&2
    exit 2
  fi
done

echo "soak: ${green} of ${n} runs green"
for f in "${failures[@]}"; do
  echo "soak: FAILED ${f}"
done
[[ "${green}" -eq "${n}" ]]

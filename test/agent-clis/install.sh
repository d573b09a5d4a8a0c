#!/usr/bin/env bash
# Installs the conformance suite's agent CLIs, each pinned in its own test-only package here, in parallel.
set -euo pipefail
cd "$(dirname "$0")"
pids=()
for dir in */; do
  # npm ci refuses the opencode and omp lockfiles: they name those CLIs' builds for other platforms, which this
  # registry does not have (optional, never installed on Linux). npm install still installs the locked versions.
  case "${dir%/}" in opencode | omp) how=install ;; *) how=ci ;; esac
  (cd "$dir" && npm "$how" --no-audit --no-fund --loglevel=error >/dev/null) & pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
for dir in */; do echo "installed ${dir%/}: $(PATH="$PWD/${dir}node_modules/.bin:$PATH" "${dir}node_modules/.bin/${dir%/}" --version 2>&1 | head -1)"; done

#!/usr/bin/env bash
# Install the system packages stitchopt needs on Debian/Ubuntu (as root), or say what to install.
# Skipped when STITCHOPT_LLVM points at an LLVM bin directory.
set -euo pipefail
# libclang-rt-19-dev: the profile runtime for -fprofile-instr-generate (hot paths, hybrid --run).
# csmith + libcsmith-dev: Csmith differential testing. g++: builds the native evaluator (llvm-19-dev's
# headers). util-linux: prlimit, which sets the resource limits of tools and test programs.
packages=(clang-19 llvm-19 llvm-19-dev lld-19 libclang-rt-19-dev csmith libcsmith-dev g++ util-linux)
# Only three HumanEval-X programs need these (CPP/22 and CPP/137 include Boost headers, CPP/162 links
# OpenSSL): installed when possible, a warning otherwise (those programs are then excluded, not failed).
# chromium + chromium-driver: the browser test of the HTML reports (skipped, with its reason, without them).
# valgrind: instruction counts for the perf objective (wall seconds are measured without it).
optional=(libboost-dev libssl-dev chromium chromium-driver valgrind)

if [ -n "${STITCHOPT_LLVM:-}" ]; then
  echo "Using LLVM from STITCHOPT_LLVM=$STITCHOPT_LLVM; not installing system packages."
  exit 0
fi
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
else
  command -v clang-19 >/dev/null 2>&1 || missing=("${packages[@]}")
fi
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
missing_optional=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${optional[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing_optional+=("$p")
  done
fi
if [ ${#missing_optional[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 && [ ${#missing[@]} -eq 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing_optional[@]}" >/dev/null; } ||
      echo "warning: could not install ${missing_optional[*]}: HumanEval-X CPP/22, CPP/137, CPP/162 may be excluded," \
        "the report browser test skipped and perf measured in seconds" >&2
  else
    missing+=("${missing_optional[@]}")
  fi
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "stitchopt needs these system packages: ${missing[*]}" >&2
  echo "Install them (e.g. sudo apt-get install ${missing[*]}), or install LLVM 17-22 elsewhere and" >&2
  echo "set STITCHOPT_LLVM=/path/to/llvm/bin." >&2
  exit 1
fi

#!/usr/bin/env bash
# Install the system packages stitchopt needs on Debian/Ubuntu (as root), or say what to install.
# Usage: install-system-deps.sh [--test] [--datasets] [--gpu]   (--test: also what only the test suite uses;
#        --datasets: also what building the Debian corpus needs, `stitchopt datasets build debian`;
#        --gpu: also LLVM's OpenMP offload device runtime; CUDA's ptxas and headers come from the gpu extra)
# Skipped when STITCHOPT_LLVM points at an LLVM bin directory (then --datasets installs only its own group).
set -euo pipefail
# Required by stitchopt's commands:
# libclang-rt-19-dev: the profile runtime for -fprofile-instr-generate (hot paths, hybrid --run).
# csmith + libcsmith-dev: Csmith differential testing (the validation suite without HumanEval-X data).
# g++: builds the native evaluator against llvm-19-dev's headers. util-linux: prlimit, which sets the resource
# limits of tools and test programs. bubblewrap: the namespaces test programs run in (no network, own PID
# namespace, read-only filesystem; without it they run under resource limits only, and `stitchopt doctor` warns).
required=(clang-19 llvm-19 llvm-19-dev lld-19 libclang-rt-19-dev csmith libcsmith-dev g++ util-linux bubblewrap)
# Installed when possible, a warning otherwise: only three HumanEval-X programs need Boost and OpenSSL
# (CPP/22 and CPP/137 include Boost headers, CPP/162 links OpenSSL; without them those programs are excluded,
# not failed); valgrind gives instruction counts for the perf objective (wall seconds are measured without it);
# cmake and dpkg-dev (dpkg-source) build the real projects of benchmarks/build_integration.py; git commits label
# shards as they are written (`stitchopt labels search|broadcast --commit`, and its test); cppcheck and clang's
# static analyzer (`clang-19 --analyze`, with Debian's clang-tools-19 beside it for scan-build) are the two
# static-analyzer anchors of the vulnerability study (security/analyzers.py; the cppcheck test is skipped
# without it).
optional=(libboost-dev libssl-dev valgrind cmake dpkg-dev git cppcheck clang-tools-19)
# With --test, also when possible: headless Chromium and its driver for the browser test of the HTML reports
# (skipped, with its reason, without them).
test_only=(chromium chromium-driver)
# With --datasets, also when possible: the build systems and common headers that Debian source packages expect
# (`stitchopt datasets build debian` builds each package with its own build system; without a header a package
# needs, that package records only what compiles without it).
# libtool-bin: the `libtool` command itself (libvterm's Makefile runs it; the libtool package has libtoolize only).
datasets_only=(dpkg-dev make cmake meson ninja-build autoconf automake libtool libtool-bin autopoint bison flex gperf
  texinfo pkg-config zlib1g-dev libncurses-dev libevent-dev libssl-dev libgmp-dev libmpfr-dev libxml2-dev libgpg-error-dev
  libassuan-dev libksba-dev libnpth0-dev libgcrypt20-dev libpcre2-dev libmnl-dev libreadline-dev libpcap-dev
  liblzo2-dev libmd-dev libnl-3-dev libnl-genl-3-dev libcap-dev libcap-ng-dev libpopt-dev libexpat1-dev
  libbrotli-dev libeigen3-dev libgflags-dev uuid-dev libutfcpp-dev)
# With --gpu, also when possible: libomp-19-dev, whose libomptarget-nvptx-sm_XX.bc is the device runtime of
# OpenMP target offload, linked into target regions as a program's build does (`stitchopt gpu measure` on a C
# file; `stitchopt doctor` reports it), and libomptarget, which runs offload programs with the
# host CPU as the device (`stitchopt gpu transfers --run`; `make test` installs it for tests/integration/
# test_offload.py).
gpu_only=(libomp-19-dev)

test=false datasets=false gpu=false
for argument in "$@"; do
  case "$argument" in
    --test) test=true ;;
    --datasets) datasets=true ;;
    --gpu) gpu=true ;;
    *) echo "usage: install-system-deps.sh [--test] [--datasets] [--gpu]" >&2; exit 2 ;;
  esac
done
if [ -n "${STITCHOPT_LLVM:-}" ]; then
  if ! $datasets; then
    echo "Using LLVM from STITCHOPT_LLVM=$STITCHOPT_LLVM; not installing system packages."
    exit 0
  fi
  echo "Using LLVM from STITCHOPT_LLVM=$STITCHOPT_LLVM; installing only what dataset builds need."
  required=() optional=()
  test=false
fi
$test && optional+=("${test_only[@]}")
$datasets && optional+=("${datasets_only[@]}")
$gpu && optional+=("${gpu_only[@]}")

not_installed() {  # the arguments that dpkg does not list as installed
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || echo "$package"
  done
}

if ! command -v dpkg-query >/dev/null 2>&1; then
  command -v clang-19 >/dev/null 2>&1 && exit 0
  echo "stitchopt needs LLVM 19 (clang, opt, llc, ...): install it, or point STITCHOPT_LLVM=/path/to/llvm/bin at" \
    "an LLVM 17-22" >&2
  exit 1
fi
mapfile -t missing < <(not_installed "${required[@]}")
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
mapfile -t missing_optional < <(not_installed "${optional[@]}")
[ ${#missing[@]} -eq 0 ] && [ ${#missing_optional[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  if [ ${#missing_optional[@]} -gt 0 ]; then
    echo "warning: optional packages missing: ${missing_optional[*]} (some HumanEval-X programs are then" \
      "excluded, perf is measured in seconds, the report browser test is skipped, the security study has no" \
      "cppcheck anchor)" >&2
  fi
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "stitchopt needs these system packages: ${missing[*]}" >&2
  echo "Install them (e.g. sudo apt-get install ${missing[*]}), or install LLVM 17-22 elsewhere and" >&2
  echo "set STITCHOPT_LLVM=/path/to/llvm/bin." >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing: ${missing[*]}"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for package in "${missing_optional[@]}"; do  # one at a time: one that cannot be had stops no other
  apt-get install -y -qq --no-install-recommends "$package" >/dev/null 2>&1 ||
    echo "warning: could not install the optional package $package" >&2
done

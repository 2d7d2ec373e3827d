#!/usr/bin/env bash
# Install PyTorch's CPU build with the given pip (usage: install-torch.sh PIP [--print]).
# stitchopt never uses a GPU, and the default Linux wheel of torch is the CUDA build with several GB of
# NVIDIA libraries, so a `+cpu` build is pinned explicitly: the newest one (>= the minimum) that the
# configured index and find-links serve, together with PyTorch's CPU wheel index when that answers within 5 s
# ($STITCHOPT_TORCH_INDEX overrides its address). Only where no `+cpu` build is reachable does it install what
# the configured index serves, with a warning. An installed torch of at least the minimum version is kept.
# --print says what it would install and installs nothing.
set -euo pipefail
pip=${1:?usage: install-torch.sh PIP [--print]}
mode=${2:-install}
python="$(dirname "$pip")/python"
minimum=2.13
cpu_index=${STITCHOPT_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}

at_least_minimum() {  # VERSION (a local label such as +cpu is ignored)
  "$python" - "$1" "$minimum" <<'EOF'
import sys
def release(text): return tuple(int(part) for part in text.split("+")[0].split(".")[:2])
sys.exit(0 if release(sys.argv[1]) >= release(sys.argv[2]) else 1)
EOF
}

run() {  # the install, or only its words under --print
  if [ "$mode" = "--print" ]; then echo "$*"; else "$@"; fi
}

if [ "$mode" != "--print" ]; then
  installed=$("$python" -c "import torch; print(torch.__version__)" 2>/dev/null || true)
  if [ -n "$installed" ] && at_least_minimum "$installed"; then
    exit 0
  fi
fi

sources=()
if "$python" - "$cpu_index" <<'EOF' 2>/dev/null; then
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=5)
EOF
  sources=(--extra-index-url "$cpu_index")
fi

cpu_versions=$("$pip" index versions torch "${sources[@]}" 2>/dev/null | sed -n 's/^Available versions: //p' |
  tr -d ' ' | tr ',' '\n' | grep '+cpu$' || true)
for version in $cpu_versions; do  # newest first
  if at_least_minimum "$version" && "$pip" install -q --dry-run "${sources[@]}" "torch==$version" >/dev/null 2>&1; then
    run "$pip" install -q "${sources[@]}" "torch==$version" && exit 0
  fi
done

echo "warning: no CPU build of torch >= $minimum is reachable; installing what the configured index serves," \
  "which may be the multi-GB CUDA build (set STITCHOPT_TORCH_INDEX to a CPU wheel index to avoid it)" >&2
run "$pip" install -q "torch>=$minimum"

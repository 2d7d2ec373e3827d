#!/usr/bin/env bash
# Install PyTorch's CPU build with the given pip (usage: install-torch.sh PIP [--print]).
# stitchopt never uses a GPU, and the default Linux wheel of torch is the CUDA build with several GB of
# NVIDIA libraries, so the CPU build is chosen explicitly, in this order:
#   1. PyTorch's CPU wheel index ($STITCHOPT_TORCH_INDEX overrides it), when it answers within 5 s;
#   2. a `+cpu` build that the configured index or find-links serve (newest first);
#   3. whatever the configured index serves, with a warning that it may be the CUDA build.
# --print says which of these it would install and installs nothing.
set -euo pipefail
pip=${1:?usage: install-torch.sh PIP [--print]}
mode=${2:-install}
python="$(dirname "$pip")/python"
minimum=2.13
cpu_index=${STITCHOPT_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}

run() {  # run the install, or only print it under --print
  if [ "$mode" = "--print" ]; then echo "$*"; else "$@"; fi
}

if [ "$mode" != "--print" ] && "$python" -c "import torch" 2>/dev/null; then
  exit 0
fi

if "$python" - "$cpu_index" <<'EOF' 2>/dev/null; then
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=5)
EOF
  run "$pip" install -q --index-url "$cpu_index" "torch>=$minimum"
  exit 0
fi

cpu_versions=$("$pip" index versions torch 2>/dev/null | sed -n 's/^Available versions: //p' | tr -d ' ' | tr ',' '\n' |
  grep '+cpu$' || true)
for version in $cpu_versions; do
  if "$python" -c "import sys; v = tuple(int(p) for p in sys.argv[1].split('+')[0].split('.')[:2]);
sys.exit(0 if v >= tuple(int(p) for p in sys.argv[2].split('.')) else 1)" "$version" "$minimum" &&
    "$pip" install -q --dry-run "torch==$version" >/dev/null 2>&1; then
    run "$pip" install -q "torch==$version"
    exit 0
  fi
done

echo "warning: no CPU build of torch is reachable; installing what the configured index serves, which may be" \
  "the multi-GB CUDA build (set STITCHOPT_TORCH_INDEX to a CPU wheel index to avoid it)" >&2
run "$pip" install -q "torch>=$minimum"

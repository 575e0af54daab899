#!/usr/bin/env bash
# The main job: build, then reconstruct the built-in phantom (2D spiral) and write demo.png.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/configure.sh"
"$root/build/examples/demo_spiral_2d" --out "$root/demo.png" "$@"

#!/usr/bin/env bash
# Installs the system packages spores needs, when missing: OpenBLAS (dense products), CBC (the
# ILP extractor) and pkg-config. Uses apt-get, with sudo when not root. Sourced by the other
# scripts; safe to run again.
set -euo pipefail
pkgs=(libopenblas-dev coinor-libcbc-dev pkg-config)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing system packages: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo (Rust 1.89 or newer) is required; install it with rustup" >&2
  exit 1
fi

#!/usr/bin/env bash
# Installs the tools the build needs beyond Rust and a C compiler: cmake and
# nasm, with which the turbojpeg-sys crate builds libjpeg-turbo (and its SIMD
# code) from source, the JPEG decoder PIL uses. Debian's packages, through
# apt-get; nothing is done when both are on the PATH. Where apt cannot
# install them (no apt-get, not root and no password-less sudo), it says
# what to install and exits 1.
set -euo pipefail

missing=()
for tool in cmake nasm; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
cannot() {
    echo "build-tools: $1; install ${missing[*]} (the build of libjpeg-turbo needs them)" >&2
    exit 1
}
command -v apt-get >/dev/null || cannot "no apt-get here"
if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
else
    cannot "not root and no password-less sudo"
fi
echo "build-tools: installing ${missing[*]} with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    "${sudo[@]}" apt-get update -qq >/dev/null
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

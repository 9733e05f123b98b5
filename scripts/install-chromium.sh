#!/usr/bin/env bash
# Installs Debian's chromium for the feature page's browser test
# (crates/python/tests/test_sae_page.py) when /usr/bin/chromium is missing.
# Where apt cannot install it (no apt-get, not root and no sudo), it says so
# and exits 0: the browser test then skips with the same reason.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null; then
    echo "install-chromium: no apt-get here; the browser test will be skipped" >&2
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
else
    echo "install-chromium: not root and no password-less sudo; the browser test will be skipped" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get install -y --no-install-recommends chromium >/dev/null; then
    "${sudo[@]}" apt-get update >/dev/null
    "${sudo[@]}" apt-get install -y --no-install-recommends chromium >/dev/null
fi

#!/usr/bin/env bash
# Installs what building and testing Gleaner needs on a fresh Debian 12 / Ubuntu 22.04+ machine.
#
# Idempotent: apt-get runs (update once, then install) only when a package is missing, so re-runs are fast.
# Runs apt as root, or through sudo when not root.
#
# Tests run with plain `cargo test`; cargo-nextest is not needed.
#
# The GUI (WebDriver) tests also need tauri-driver, which takes minutes to compile. It is installed
# when asked for: `scripts/install-deps.sh --gui` (scripts/test.sh does) or GLEANER_GUI_TESTS=1;
# `scripts/run.sh` does not need it.
set -euo pipefail

gui="${GLEANER_GUI_TESTS:-0}"
for arg in "$@"; do
  case "$arg" in
    --gui) gui=1 ;;
    -h | --help)
      sed -n '2,10s/^# \{0,1\}//p' "$0"
      exit 0
      ;;
    *)
      echo "install-deps.sh: unknown argument: $arg (expected --gui)" >&2
      exit 2
      ;;
  esac
done

# Building: compiler toolchain, pkg-config and the WebKitGTK/GTK stack Tauri 2 links against on Linux.
build_packages=(
  build-essential
  pkg-config
  curl
  file
  libwebkit2gtk-4.1-dev
  libgtk-3-dev
  libayatana-appindicator3-dev
  librsvg2-dev
  libxdo-dev
  libssl-dev
)
# Testing: a headless X server, a session bus, the WebKit WebDriver and ImageMagick for screenshots.
test_packages=(
  xvfb
  xauth
  webkit2gtk-driver
  dbus
  dbus-x11
  imagemagick
  # The offline test takes the network away in a namespace (unshare) and brings it back (ip).
  util-linux
  iproute2
  # The PostgreSQL backend's tests run against a real server (scripts/postgres-for-tests.sh
  # starts a throwaway one from Debian's binaries), with TLS certificates openssl makes.
  postgresql
  openssl
)

missing=()
for pkg in "${build_packages[@]}" "${test_packages[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
  if [[ "$status" != "installed" ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all system packages already installed"
else
  if ((EUID == 0)); then
    sudo=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "install-deps: cargo is not on PATH; install Rust from https://rustup.rs (rust-version 1.89 or newer)" >&2
  exit 1
fi

if [[ "$gui" == "1" ]]; then
  if command -v tauri-driver >/dev/null 2>&1; then
    echo "install-deps: tauri-driver already installed"
  else
    # ^2 keeps to the Tauri 2 line (crates.io's latest is a 3.0 alpha); tauri-driver 2.x needs Rust 1.90+.
    echo "install-deps: installing tauri-driver (this takes a few minutes)"
    cargo install tauri-driver --locked --version '^2'
  fi
fi

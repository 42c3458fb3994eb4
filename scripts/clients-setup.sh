#!/bin/sh
# Installs the real clients that packages clients and conformance drive, idempotent and
# offline-safe: Node.js and python3-pytest (package fixture) from Debian when they are missing, then the Codex CLI at
# the pinned version into .clients/ (ignored by git; never a global install).
# Nothing is downloaded when the pinned version is already there.
set -eu
cd "$(dirname "$0")/.."
CODEX_VERSION=0.171.0
DIR=$PWD/.clients
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
fi
# Debian's pytest, which runs the README's pytest fixture recipe (package
# fixture) with the system python3.
if ! command -v pytest-3 >/dev/null; then
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pytest
fi
# Any codex command writes under $CODEX_HOME (default ~/.codex), so the check
# runs with a throwaway one.
installed() {
  home=$(mktemp -d)
  CODEX_HOME=$home "$DIR/node_modules/.bin/codex" --version 2>/dev/null || true
  rm -rf "$home"
}
if [ "$(installed)" != "codex-cli $CODEX_VERSION" ]; then
  rm -rf "$DIR/node_modules"
  npm install --prefix "$DIR" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "@openai/codex@$CODEX_VERSION"
fi
# The SDK package conformance type-checks against (its own pins).
sh scripts/sdk-setup.sh

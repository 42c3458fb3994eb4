#!/bin/sh
# Installs what the browser tests need, offline-safe and idempotent: the
# Chromium that CHROMIUM_PATH names (the Makefile's CHROMIUM), from the
# Debian package of the same name (/usr/bin/chromium-headless-shell is in
# chromium-headless-shell), Node.js, and the playwright-core driver whose
# version the Go module pins. It never downloads a browser from anywhere
# else.
set -eu
cd "$(dirname "$0")/.."
PW_MODULE=github.com/mxschmitt/playwright-go
PW_DIR=${PLAYWRIGHT_DRIVER_PATH:-$PWD/.pw}
CHROMIUM=${CHROMIUM_PATH:?set CHROMIUM_PATH to the browser to install (make e2e-deps does)}
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
if [ ! -x "$CHROMIUM" ]; then
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$(basename "$CHROMIUM")" || {
    echo "$CHROMIUM is missing and no Debian package is named $(basename "$CHROMIUM"): install that browser, or set CHROMIUM to one" >&2
    exit 1
  }
fi
if [ -z "${PLAYWRIGHT_NODEJS_PATH:-}" ] && ! command -v node >/dev/null; then
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
fi
NODE=${PLAYWRIGHT_NODEJS_PATH:-$(command -v node)}
go list -m "$PW_MODULE" >/dev/null 2>&1 || { echo "go.mod must require $PW_MODULE" >&2; exit 1; }
go mod download "$PW_MODULE"
PW_VERSION=$(sed -n 's/^[[:space:]]*playwrightCliVersion[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' \
  "$(go list -m -f '{{.Dir}}' "$PW_MODULE")/run.go")
[ -n "$PW_VERSION" ] || { echo "cannot read playwrightCliVersion" >&2; exit 1; }
if [ "$("$NODE" "$PW_DIR/package/cli.js" --version 2>/dev/null)" != "Version $PW_VERSION" ]; then
  rm -rf "$PW_DIR/node_modules" "$PW_DIR/package"
  npm install --prefix "$PW_DIR" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "playwright-core@$PW_VERSION"
  ln -sfn node_modules/playwright-core "$PW_DIR/package"
fi
# axe-core, the accessibility checker the browser tests inject into every
# page; pinned, and in its own folder so it never disturbs the driver's.
AXE_VERSION=4.14.1
AXE_DIR=$PW_DIR/axe
if [ "$("$NODE" -p "require('$AXE_DIR/node_modules/axe-core/package.json').version" 2>/dev/null)" != "$AXE_VERSION" ]; then
  rm -rf "$AXE_DIR"
  npm install --prefix "$AXE_DIR" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "axe-core@$AXE_VERSION"
fi

#!/bin/sh
# Installs what package conformance type-checks and runs against: the openai
# npm package, zod, TypeScript and ws (the SDK's Node WebSocket transport for
# ResponsesWS, a peer dependency), at the pinned versions, into .clients/sdk/
# (ignored by git; never a global install). Idempotent and offline-safe:
# nothing is downloaded when the pinned versions are there. clients-setup.sh
# calls it once Node.js is installed.
#
# openai 7.60.0 asks for Node 22; 7.59.0 is the newest that runs on the
# machine's Node 20 (its engines field says 22 too, so the install does not
# hold npm to it).
set -eu
cd "$(dirname "$0")/.."
OPENAI_VERSION=7.59.0
ZOD_VERSION=4.6.7
TYPESCRIPT_VERSION=5.9.3
WS_VERSION=8.23.0
DIR=$PWD/.clients/sdk
installed() {
  node -e 'try { process.stdout.write(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).version) } catch {}' \
    "$DIR/node_modules/$1/package.json"
}
if [ "$(installed openai)" != "$OPENAI_VERSION" ] || [ "$(installed zod)" != "$ZOD_VERSION" ] ||
  [ "$(installed typescript)" != "$TYPESCRIPT_VERSION" ] || [ "$(installed ws)" != "$WS_VERSION" ]; then
  rm -rf "$DIR/node_modules"
  mkdir -p "$DIR"
  npm install --prefix "$DIR" --no-save --no-package-lock --no-audit --no-fund --loglevel=error --engine-strict=false \
    "openai@$OPENAI_VERSION" "zod@$ZOD_VERSION" "typescript@$TYPESCRIPT_VERSION" "ws@$WS_VERSION"
fi

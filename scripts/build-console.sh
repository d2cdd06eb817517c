#!/usr/bin/env bash
# Rebuilds the console's bundle (CodeMirror 6 and uPlot from npm, bundled by
# esbuild, from console-bundle/) into web-console/lib/ and
# web-console/js/lib.js. The bundle is committed, so `cargo build` needs no
# Node; run this after changing console-bundle/ and commit the result. `--check` fails when the
# committed bundle differs from what the source builds (scripts/test.sh
# runs it).
set -euo pipefail
cd "$(dirname "$0")/../console-bundle"
npm ci --no-audit --no-fund --silent
node build.mjs "$@"

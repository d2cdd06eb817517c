#!/usr/bin/env bash
# Builds the Go SDK driver tests/sdk_go.rs (and tests/failover.rs) run:
# tests/go/bin/tacos-go-sdk, from this module (github.com/nacos-group/nacos-sdk-go/v2,
# pinned in go.mod/go.sum). The module cache is Go's default (GOMODCACHE), so a
# second run on the same machine downloads nothing; `go build` is incremental
# and relinks nothing when no source changed.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v go >/dev/null 2>&1; then
  echo "tests/go/prepare.sh: the go toolchain is not on PATH" >&2
  exit 1
fi
go mod download
mkdir -p bin
go build -o bin/tacos-go-sdk .
# go build leaves an up-to-date binary as it was; tests/sdk_go.rs compares
# its time with the sources' (a checkout may touch them without a change).
touch bin/tacos-go-sdk
echo "tests/go/bin/tacos-go-sdk built ($(go list -m -f '{{.Path}} {{.Version}}' github.com/nacos-group/nacos-sdk-go/v2))"

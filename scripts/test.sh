#!/usr/bin/env bash
# The project's test command: every package, with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -race -count=1 -timeout 30m ./...

#!/usr/bin/env bash
# Build the reference provider's CCM and cloud into OCI images FROM scratch
# (static binaries, a non-root user, OCI labels) with go-containerregistry,
# and load them into the local Docker engine. Nothing is pulled and no
# Dockerfile is used. See docs/images.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/goenv.sh

exec go run ./internal/images/cmd/build-images "$@"

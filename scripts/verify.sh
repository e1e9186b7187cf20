#!/usr/bin/env bash
# Static checks: formatting, vet, and that go.mod still pins every staging
# module the way scripts/update-k8s-deps.sh leaves it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/goenv.sh

unformatted="$(gofmt -l $(git ls-files '*.go'))"
if [[ -n "${unformatted}" ]]; then
  echo "not gofmt-ed:" >&2
  echo "${unformatted}" >&2
  exit 1
fi
go vet ./...
k8s="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
staging="v0.${k8s#v1.}"
bad="$(go list -m -f '{{.Path}} {{if .Replace}}{{.Replace.Version}}{{end}}' all | awk -v want="${staging}" '$1 ~ /^k8s\.io\/(api|apimachinery|client-go|cloud-provider|controller-manager|component-base|apiserver)$/ && $2 != want')"
if [[ -n "${bad}" ]]; then
  echo "staging modules not replaced with ${staging}; run scripts/update-k8s-deps.sh ${k8s}:" >&2
  echo "${bad}" >&2
  exit 1
fi
echo "verify: ok (Kubernetes ${k8s})"

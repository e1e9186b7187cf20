# ccm-conformance: every target delegates to scripts/.
SHELL := /usr/bin/env bash

ARTIFACTS ?= $(CURDIR)/_artifacts
LABEL_FILTER ?=
N ?= 20

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the harness, its kubetest2 tester and the reference provider into bin/
	@scripts/build.sh

.PHONY: conformance
conformance: build ## Full conformance run against the reference provider on the local cluster
	@ARTIFACTS="$(ARTIFACTS)" LABEL_FILTER="$(LABEL_FILTER)" scripts/conformance.sh

.PHONY: images
images: ## Build the reference CCM and cloud as OCI images FROM scratch and load them into Docker (docs/images.md)
	@scripts/images.sh

.PHONY: conformance-image
conformance-image: build images ## Full conformance run against the reference CCM image on the local cluster
	@ARTIFACTS="$(ARTIFACTS)" LABEL_FILTER="$(LABEL_FILTER)" PROFILE=providers/profiles/reference-image.yaml scripts/conformance.sh

KIND_PROFILE ?= providers/profiles/reference-kind.yaml

.PHONY: conformance-kind
conformance-kind: build ## Full conformance run against the reference CCM image on a new kind cluster (docs/kind.md; KIND_PROFILE=providers/profiles/reference-kind-dual.yaml for dual-stack); builds the node image on first use
	@scripts/images.sh --targets all
	@ARTIFACTS="$(ARTIFACTS)" LABEL_FILTER="$(LABEL_FILTER)" BACKEND=kind PROFILE="$(KIND_PROFILE)" scripts/conformance.sh

.PHONY: conformance-vsphere
conformance-vsphere: build ## The vSphere CCM, built unmodified from k8s.io/cloud-provider-vsphere on first use (about 8 minutes, then cached), against govmomi's vCenter simulator on the local cluster; red while docs/findings.md has a finding (docs/providers.md)
	@ARTIFACTS="$(ARTIFACTS)" LABEL_FILTER="$(LABEL_FILTER)" PROFILE=providers/profiles/vsphere.yaml scripts/conformance.sh

.PHONY: conformance-aws
conformance-aws: build ## The AWS CCM, built unmodified from k8s.io/cloud-provider-aws on first use (about 8 minutes, then cached), against the project's EC2 and ELB emulator on the local cluster; red while docs/findings.md has a finding (docs/providers.md)
	@ARTIFACTS="$(ARTIFACTS)" LABEL_FILTER="$(LABEL_FILTER)" PROFILE=providers/profiles/aws.yaml scripts/conformance.sh

.PHONY: conformance-aws-nlb
conformance-aws-nlb: build ## The AWS CCM as conformance-aws, with every LoadBalancer Service annotated for a Network Load Balancer (providers/profiles/aws-nlb.yaml, docs/providers.md)
	@ARTIFACTS="$(ARTIFACTS)" LABEL_FILTER="$(LABEL_FILTER)" PROFILE=providers/profiles/aws-nlb.yaml scripts/conformance.sh

.PHONY: conformance-aws-nlb-managed
conformance-aws-nlb-managed: build ## The AWS CCM as conformance-aws-nlb, with NLBSecurityGroupMode = Managed: each NLB gets a security group of its own (providers/profiles/aws-nlb-managed.yaml, docs/providers.md)
	@ARTIFACTS="$(ARTIFACTS)" LABEL_FILTER="$(LABEL_FILTER)" PROFILE=providers/profiles/aws-nlb-managed.yaml scripts/conformance.sh

.PHONY: test
test: ## Unit and integration tests (builds the local cluster's binaries on first use)
	@scripts/test.sh

.PHONY: test-unit
test-unit: ## Unit tests only (go test -short)
	@. scripts/goenv.sh && go test -short ./... ./driversdk/... ./providers/...

.PHONY: bench
bench: ## Benchmarks: micro benchmarks, then whole runs and node initialization at scale (docs/performance.md)
	@scripts/bench.sh

.PHONY: soak
soak: build ## The full conformance run N times (default N=20) against the reference provider; prints how many were green
	@N="$(N)" scripts/soak.sh

.PHONY: mutants
mutants: ## The mutant corpus and the null CCM: every mutant caught, every spec killed, nothing passes a CCM that does nothing (docs/mutants.md)
	@scripts/mutants.sh

.PHONY: e2e-binaries
e2e-binaries: ## e2e.test, ginkgo and kubectl in _output/e2e, for kubetest2's stock ginkgo tester (docs/kubetest2.md)
	@scripts/e2e-binaries.sh _output/e2e

.PHONY: release
release: ## A release into _output/release: the CLI and the kubetest2 tester for linux/amd64 and linux/arm64, an SPDX module list per binary, one OCI image of both, SHA256SUMS (docs/releasing.md; VERSION=v0.1.0 to stamp one)
	@rm -rf _output/release && . scripts/goenv.sh && go run ./tools/release/cmd/make-release --out _output/release $(if $(VERSION),--version $(VERSION))

.PHONY: verify
verify: ## gofmt, go vet, and the module's Kubernetes pins
	@scripts/verify.sh

.PHONY: clean
clean: ## Remove bin/, _artifacts/ and _output/ (the image tarballs)
	rm -rf bin _artifacts _output

// Package e2etest is the ccm-conformance suites as the e2e.test binary that
// kubetest2's stock ginkgo tester runs (docs/kubetest2.md, "With the stock
// ginkgo tester"). Build it with
//
//	go test -c -tags e2etest -o e2e.test ./cmd/kubetest2-tester-ccm/e2etest
//
// (make e2e-binaries also builds the ginkgo CLI beside it). Without the tag
// the package has no tests, so `go test ./...` does not run a conformance
// run.
//
// Floor: the commands, the top. They parse flags and delegate to the floors
// below.
package e2etest

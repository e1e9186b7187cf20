package labels

import (
	"fmt"
	"strings"
)

// Which specs decide a last-known-good verdict, and on which backends. A
// spec is release-blocking when it carries ReleaseBlocking; a
// release-blocking spec that also carries a Need blocks only on the
// backends that can meet that need everywhere (docs/lkg.md,
// "Release-blocking on each backend"). The verdict (reports/lkg) and
// `ccm-conformance list` both read this table, so what a run is judged by
// and what a user is told beforehand cannot differ.

// ReleaseBlocking is the ginkgo label of the release-blocking specs.
const ReleaseBlocking = "ReleaseBlocking"

// The backends a run can use, by the names their Name methods give
// (framework/local, kind, framework/cluster's existing-cluster backend).
const (
	BackendLocal      = "local"
	BackendKind       = "kind"
	BackendKubeconfig = "kubeconfig"
)

// Backends lists them in the order docs and `list` show them.
var Backends = []string{BackendLocal, BackendKind, BackendKubeconfig}

// Need is a ginkgo label naming what a spec needs of its environment
// beyond the profile's capabilities and the cloud driver's verbs: something
// only some backends can give, whatever the provider.
type Need string

const (
	// SimulatedNodes: nodes whose kubelet the harness plays, so it can
	// register a node with a chosen node IP annotation or make a node's
	// kubelet fall silent in a chosen zone. Only the local backend
	// simulates its nodes.
	SimulatedNodes Need = "NeedsSimulatedNodes"
	// SimulatedCloud: a cloud the harness can make misbehave or rewrite
	// (the simulator-only driver verbs `fault inject` and `instance
	// set-addresses`, docs/cloud-driver.md). The local and kind backends
	// run the provider's emulator; an existing cluster's cloud may be a
	// real one, where no driver can make its API fail on purpose.
	SimulatedCloud Need = "NeedsSimulatedCloud"
)

// Needs lists every Need.
var Needs = []Need{SimulatedNodes, SimulatedCloud}

// metBy says on which backends each need is met.
var metBy = map[Need][]string{
	SimulatedNodes: {BackendLocal},
	SimulatedCloud: {BackendLocal, BackendKind},
}

// What says in a few words what a need is, for `list` and verdicts.
func (n Need) What() string {
	switch n {
	case SimulatedNodes:
		return "simulated nodes"
	case SimulatedCloud:
		return "a simulated cloud"
	}
	return string(n)
}

// Known reports whether a label is a Need.
func (n Need) Known() bool {
	_, ok := metBy[n]
	return ok
}

// MetOn reports whether backend meets the need.
func (n Need) MetOn(backend string) bool {
	for _, b := range metBy[n] {
		if b == backend {
			return true
		}
	}
	return false
}

// Blocks reports whether a spec with these labels is release-blocking on
// backend, and when it carries Label but is not, why ("needs simulated
// nodes, which kubeconfig does not have"). An unknown backend (a run
// recorded before runs named theirs, or a name this table does not know)
// holds every labelled spec to account: nothing is excused by a backend
// nobody can check.
func Blocks(labels []string, backend string) (bool, string) {
	if !has(labels, ReleaseBlocking) {
		return false, ""
	}
	if !known(backend) {
		return true, ""
	}
	var unmet []string
	for _, l := range labels {
		if n := Need(l); n.Known() && !n.MetOn(backend) {
			unmet = append(unmet, n.What())
		}
	}
	if len(unmet) == 0 {
		return true, ""
	}
	return false, fmt.Sprintf("needs %s, which the %s backend does not have", strings.Join(unmet, " and "), backend)
}

func known(backend string) bool { return has(Backends, backend) }

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Package kubeversion is the project's one reading of a Kubernetes version:
// the release this module is pinned to, and the parser that `run`,
// `matrix`, `lkg` and the profile share, so that they accept and refuse the
// same strings.
//
// Floor: a leaf. It imports only the standard library, so that the reports
// floor and the framework can both stand on it.
package kubeversion

import (
	"fmt"
	"regexp"
	"strconv"
)

// Pinned is the Kubernetes release this module is built and tested
// against: the local cluster's and the kind node image's default, and the
// release whose staging modules (k8s.io/api, client-go, ... at v0.37.2)
// go.mod requires. scripts/update-k8s-deps.sh changes both together, and
// this package's tests fail when they disagree.
const Pinned = "v1.37.2"

// Version is a Kubernetes release as its git tag names it: v1.37.2, or a
// pre-release of one, v1.38.0-rc.1 (alpha, beta and rc, as Kubernetes tags
// them).
type Version struct {
	Major, Minor, Patch int
	// PreKind is "alpha", "beta" or "rc"; empty for a release.
	PreKind string
	// PreNumber is the pre-release's number: 1 in v1.38.0-rc.1.
	PreNumber int
}

// form is a Kubernetes tag: v1.N.P with an optional -alpha.M, -beta.M or
// -rc.M. Numbers have no leading zeros, as in semver.
var form = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-(alpha|beta|rc)\.(0|[1-9][0-9]*))?$`)

// Parse reads s, which must be written as Kubernetes tags its releases
// (a leading "v", three numbers, optionally -alpha.N, -beta.N or -rc.N).
// The error names s and gives an example.
func Parse(s string) (Version, error) {
	m := form.FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("Kubernetes version %q: want a release such as %s or a pre-release such as v1.38.0-rc.1", s, Pinned)
	}
	n := func(i int) int {
		v, _ := strconv.Atoi(m[i]) // the pattern admits only digits
		return v
	}
	v := Version{Major: n(1), Minor: n(2), Patch: n(3), PreKind: m[4]}
	if m[5] != "" {
		v.PreNumber = n(5)
	}
	if v.Major != 1 {
		return Version{}, fmt.Errorf("Kubernetes version %q: the major version of Kubernetes is 1", s)
	}
	return v, nil
}

// MustParse is Parse for constants; it panics on an error.
func MustParse(s string) Version {
	v, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return v
}

// String writes v back as its tag.
func (v Version) String() string {
	return "v" + v.core(v.Major)
}

// Staging is the version of the staging modules (k8s.io/api,
// k8s.io/client-go, ...) released with v: v0.37.2 for v1.37.2,
// v0.38.0-rc.1 for v1.38.0-rc.1.
func (v Version) Staging() string {
	return "v" + v.core(0)
}

// MinorRelease is the release line: v1.37.
func (v Version) MinorRelease() string {
	return fmt.Sprintf("v%d.%d", v.Major, v.Minor)
}

// IsPreRelease reports whether v is an alpha, beta or release candidate.
func (v Version) IsPreRelease() bool { return v.PreKind != "" }

func (v Version) core(major int) string {
	s := fmt.Sprintf("%d.%d.%d", major, v.Minor, v.Patch)
	if v.PreKind != "" {
		s += fmt.Sprintf("-%s.%d", v.PreKind, v.PreNumber)
	}
	return s
}

// preRank orders pre-release kinds; a release ranks above all of them.
var preRank = map[string]int{"alpha": 0, "beta": 1, "rc": 2, "": 3}

// Compare returns -1, 0 or +1 as a is older than, the same as or newer
// than b: v1.38.0-alpha.1 < v1.38.0-beta.0 < v1.38.0-rc.1 < v1.38.0.
func Compare(a, b Version) int {
	for _, d := range [][2]int{
		{a.Major, b.Major}, {a.Minor, b.Minor}, {a.Patch, b.Patch},
		{preRank[a.PreKind], preRank[b.PreKind]}, {a.PreNumber, b.PreNumber},
	} {
		switch {
		case d[0] < d[1]:
			return -1
		case d[0] > d[1]:
			return 1
		}
	}
	return 0
}

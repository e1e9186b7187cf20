package framework

import (
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/apimachinery/pkg/util/version"
)

// An UpstreamChange is a change in Kubernetes itself that decides whether a
// spec applies to a cluster: a spec that relies on it carries its Label, and
// the runner skips the spec, saying why, on a cluster whose Kubernetes
// version is outside [Since, Until). The versions are minors ("v1.36"): the
// change is in every patch release of them.
type UpstreamChange struct {
	// Label is the ginkgo label of the specs that rely on the change: the
	// upstream feature gate's name where there is one.
	Label string
	// Since is the first minor with the behaviour; "" for no lower bound.
	Since string
	// Until is the first minor without it; "" for no upper bound.
	Until string
	// What says what changed and where upstream records it.
	What string
}

// RelaxedServiceNames: from v1.36 the API server validates a new Service's
// name as a DNS-1123 label, not a DNS-1035 one, so it may start with a
// digit (pkg/apis/core/validation ValidateServiceCreate).
var RelaxedServiceNames = UpstreamChange{
	Label: "RelaxedServiceNameValidation",
	Since: "v1.36",
	What:  "KEP-5311: a Service's name may start with a digit (feature gate RelaxedServiceNameValidation, beta and on by default in v1.36, GA in v1.37)",
}

// UpstreamChanges are the changes specs may carry; the runner knows no
// others. docs/suites.md lists them.
var UpstreamChanges = []UpstreamChange{RelaxedServiceNames}

// upstreamChange returns the known change a label names.
func upstreamChange(label string) (UpstreamChange, bool) {
	for _, c := range UpstreamChanges {
		if c.Label == label {
			return c, true
		}
	}
	return UpstreamChange{}, false
}

// Applies reports whether a cluster at gitVersion (the API server's
// version, "v1.35.4" or "v1.36.0-alpha.1+abc") has the change.
func (c UpstreamChange) Applies(gitVersion string) (bool, error) {
	v, err := version.ParseGeneric(gitVersion)
	if err != nil {
		return false, fmt.Errorf("the cluster's Kubernetes version %q: %w", gitVersion, err)
	}
	minor := version.MajorMinor(v.Major(), v.Minor())
	if c.Since != "" && minor.LessThan(version.MustParseGeneric(c.Since)) {
		return false, nil
	}
	if c.Until != "" && !minor.LessThan(version.MustParseGeneric(c.Until)) {
		return false, nil
	}
	return true, nil
}

// Range says which Kubernetes versions have the change.
func (c UpstreamChange) Range() string {
	switch {
	case c.Since != "" && c.Until != "":
		return fmt.Sprintf("Kubernetes %s up to, not including, %s", c.Since, c.Until)
	case c.Since != "":
		return fmt.Sprintf("Kubernetes %s and later", c.Since)
	case c.Until != "":
		return fmt.Sprintf("Kubernetes before %s", c.Until)
	}
	return "every Kubernetes version"
}

// OutsideVersionRange is how the skip message of a spec whose Kubernetes
// range excludes the cluster begins; LKG verdicts read it (a spec that
// does not apply leaves no hole in a run).
const OutsideVersionRange = "does not apply to this cluster's Kubernetes"

// versionSkip returns the skip message for a spec with these labels on a
// cluster whose API server reports gitVersion and, when it emulates an
// older minor (compatibility versions, KEP-4330), that minor as emulation
// ("1.35"); "" when the spec applies. An unknown version ("", where the
// harness could not ask) or an unstamped build (v0.0.0-master) skips
// nothing: the spec runs, and fails loudly if the cluster lacks the change.
func versionSkip(labels []string, gitVersion, emulation string) (string, error) {
	if gitVersion == "" {
		return "", nil
	}
	v, err := version.ParseGeneric(gitVersion)
	if err != nil {
		return "", fmt.Errorf("the cluster's Kubernetes version %q: %w", gitVersion, err)
	}
	if v.Major() == 0 {
		return "", nil
	}
	effective, cluster := gitVersion, gitVersion
	if emulation != "" {
		effective, cluster = "v"+emulation+".0", fmt.Sprintf("%s (emulating %s)", gitVersion, emulation)
	}
	for _, l := range labels {
		c, ok := upstreamChange(l)
		if !ok {
			continue
		}
		applies, err := c.Applies(effective)
		if err != nil {
			return "", err
		}
		if !applies {
			return fmt.Sprintf("%s %s: the spec needs %s (%s)", OutsideVersionRange, cluster, c.Range(), c.What), nil
		}
	}
	return "", nil
}

// SkipOutsideVersionRange skips the current spec when one of its labels
// names an upstream change this cluster's Kubernetes version does not
// have, and says which. The runner calls it before every spec.
func (f *Framework) SkipOutsideVersionRange() {
	msg, err := versionSkip(ginkgo.CurrentSpecReport().Labels(), f.KubernetesVersion, f.KubernetesEmulation)
	if err != nil {
		ginkgo.Fail("[harness] " + err.Error())
	}
	if msg != "" {
		ginkgo.Skip(msg)
	}
}

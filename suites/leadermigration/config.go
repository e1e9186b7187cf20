package leadermigration

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// The components a LeaderMigrationConfiguration assigns controllers to.
const (
	componentCCM = "cloud-controller-manager"
	componentKCM = "kube-controller-manager"
	// componentAny lets whichever manager holds the migration lease run
	// the controller.
	componentAny = "*"
)

// defaultMigrationLease is the migration lease of upstream's default
// configuration, used when a controller manager gets no
// --leader-migration-config.
const defaultMigrationLease = "cloud-provider-extraction-migration"

// cloudController is a controller that ran in kube-controller-manager
// before the cloud provider extraction and runs in the CCM now: the ones a
// leader migration moves.
type cloudController struct {
	// name is the CCM's name for it, as k8s.io/cloud-provider registers it
	// and as /healthz?verbose lists it.
	name string
	// kcmName is kube-controller-manager's name for it, which upstream's
	// default migration configuration still uses.
	kcmName string
	// capability is what a profile claims when its CCM runs the controller.
	capability profile.Capability
}

var cloudControllers = []cloudController{
	{name: "service-lb-controller", kcmName: "service-controller", capability: profile.LoadBalancer},
	{name: "node-route-controller", kcmName: "route-controller", capability: profile.Routes},
	{name: "cloud-node-lifecycle-controller", kcmName: "cloud-node-lifecycle-controller", capability: profile.NodeLifecycle},
}

// serviceController is the migrated controller whose work the specs can see
// from outside: a LoadBalancer Service gets ingress, the cloud gets calls.
const serviceController = "service-lb-controller"

// migratedControllers returns the CCM names of the cloud controllers the
// profile says its CCM runs.
func migratedControllers(p *profile.Profile) []string {
	var out []string
	for _, c := range cloudControllers {
		if p.Has(c.capability) {
			out = append(out, c.name)
		}
	}
	return out
}

// kcmNameOf returns kube-controller-manager's name for a CCM controller.
func kcmNameOf(name string) string {
	for _, c := range cloudControllers {
		if c.name == name {
			return c.kcmName
		}
	}
	return ""
}

// cloudControllerNames lists the CCM names of every cloud controller.
func cloudControllerNames() []string {
	out := make([]string, len(cloudControllers))
	for i, c := range cloudControllers {
		out[i] = c.name
	}
	return out
}

// isCloudController reports whether name is the CCM's name of a controller
// that ran in kube-controller-manager.
func isCloudController(name string) bool { return kcmNameOf(name) != "" }

// controllerLeader assigns one controller to a component.
type controllerLeader struct {
	Name      string `json:"name"`
	Component string `json:"component"`
}

// migrationConfig is a LeaderMigrationConfiguration
// (controllermanager.config.k8s.io/v1).
type migrationConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	LeaderName string `json:"leaderName"`
	// ResourceLock is left empty: v1 has no such field (always leases);
	// /configz (v1alpha1) shows it.
	ResourceLock      string             `json:"resourceLock,omitempty"`
	ControllerLeaders []controllerLeader `json:"controllerLeaders"`
}

// newMigrationConfig returns a configuration with lease leaderName that
// gives every controller to component.
func newMigrationConfig(leaderName, component string, controllers []string) migrationConfig {
	c := migrationConfig{
		APIVersion: "controllermanager.config.k8s.io/v1",
		Kind:       "LeaderMigrationConfiguration",
		LeaderName: leaderName,
	}
	for _, name := range controllers {
		c.ControllerLeaders = append(c.ControllerLeaders, controllerLeader{Name: name, Component: component})
	}
	return c
}

// assign gives one controller to another component.
func (c migrationConfig) assign(name, component string) migrationConfig {
	c.ControllerLeaders = slices.Clone(c.ControllerLeaders)
	for i := range c.ControllerLeaders {
		if c.ControllerLeaders[i].Name == name {
			c.ControllerLeaders[i].Component = component
		}
	}
	return c
}

// ownedBy returns the controllers assigned to component (or to any).
func (c migrationConfig) ownedBy(component string) []string {
	var out []string
	for _, l := range c.ControllerLeaders {
		if l.Component == component || l.Component == componentAny {
			out = append(out, l.Name)
		}
	}
	return out
}

// write saves the configuration as YAML in dir and returns its path.
func (c migrationConfig) write(dir, name string) (string, error) {
	data, err := yaml.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encoding leader migration configuration %s: %w", name, err)
	}
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("writing leader migration configuration: %w", err)
	}
	return path, nil
}

// readMigrationConfig reads a LeaderMigrationConfiguration file, such as the
// one a provider ships with its CCM.
func readMigrationConfig(path string) (migrationConfig, error) {
	var c migrationConfig
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("leader migration configuration: %w", err)
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("leader migration configuration %s: %w", path, err)
	}
	if c.Kind != "LeaderMigrationConfiguration" || !strings.HasPrefix(c.APIVersion, "controllermanager.config.k8s.io/") {
		return c, fmt.Errorf("leader migration configuration %s: apiVersion %q, kind %q: want controllermanager.config.k8s.io/v1, LeaderMigrationConfiguration",
			path, c.APIVersion, c.Kind)
	}
	if c.LeaderName == "" {
		return c, fmt.Errorf("leader migration configuration %s: leaderName is empty", path)
	}
	return c, nil
}

// String shows the assignments, for failure messages.
func (c migrationConfig) String() string {
	parts := make([]string, len(c.ControllerLeaders))
	for i, l := range c.ControllerLeaders {
		parts[i] = l.Name + "→" + l.Component
	}
	return fmt.Sprintf("lease %s: %s", c.LeaderName, strings.Join(parts, ", "))
}

// nonControllerChecks are the /healthz checks of a controller manager that
// are not controllers.
var nonControllerChecks = map[string]bool{"leaderElection": true, "ping": true, "log": true}

// healthzControllers returns the controllers a /healthz?verbose answer
// lists: a controller manager adds one check per controller once it has
// started it ("[+]service-lb-controller ok"), and only then.
func healthzControllers(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "[+]") && !strings.HasPrefix(line, "[-]") {
			continue
		}
		name, _, _ := strings.Cut(line[3:], " ")
		if name == "" || nonControllerChecks[name] || strings.Contains(name, "/") {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// ccmConfigzName is where k8s.io/cloud-provider puts the CCM's
// configuration in /configz.
const ccmConfigzName = "cloudcontrollermanager.config.k8s.io"

// configzMigration decodes the leader migration part of a CCM's /configz
// answer: the configuration it really runs with, whichever way it got it.
func configzMigration(body []byte) (enabled bool, c migrationConfig, err error) {
	var doc map[string]struct {
		Generic struct {
			LeaderMigrationEnabled bool
			LeaderMigration        migrationConfig
		}
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return false, c, fmt.Errorf("decoding /configz: %w", err)
	}
	// A CCM built on k8s.io/cloud-provider registers its configuration under
	// this name; take any other only when it is missing.
	keys := slices.Sorted(maps.Keys(doc))
	if _, ok := doc[ccmConfigzName]; ok {
		keys = []string{ccmConfigzName}
	}
	if len(keys) == 0 {
		return false, c, fmt.Errorf("/configz has no configuration: %.200s", body)
	}
	v := doc[keys[0]]
	return v.Generic.LeaderMigrationEnabled, v.Generic.LeaderMigration, nil
}

// controllerNames lists the names of a configuration's controllers.
func (c migrationConfig) controllerNames() []string {
	out := make([]string, len(c.ControllerLeaders))
	for i, l := range c.ControllerLeaders {
		out[i] = l.Name
	}
	return out
}

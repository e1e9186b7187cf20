package framework

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/nodes"
)

// Machines adds simulated machines to a cluster whose nodes the harness
// simulates: a cloud instance made through the cloud driver, and a
// simulated kubelet that registers the instance's name as a Node.
type Machines struct {
	driver     *clouddriver.Driver
	kubelets   *nodes.Pool
	ipFamilies []string
	watch      *Watch
}

// NewMachines ties a cloud driver and a kubelet pool together. ipFamilies
// is the default for new instances. Registering and removing a Node returns
// once watch shows it so.
func NewMachines(driver *clouddriver.Driver, kubelets *nodes.Pool, ipFamilies []string, watch *Watch) *Machines {
	return &Machines{driver: driver, kubelets: kubelets, ipFamilies: ipFamilies, watch: watch}
}

// MachineRequest describes a new machine.
type MachineRequest struct {
	// Name of the instance and Node; default a unique "ccm-node-xxxxx".
	Name string
	// IPFamilies of the instance; default the profile's cluster.ipFamilies.
	IPFamilies []string
	// Zone and InstanceType, if the cloud should not choose.
	Zone, InstanceType string
	// NodeIPs picks the kubelet's --node-ip from the new instance. Nil
	// starts the kubelet without node IPs.
	NodeIPs func(*clouddriver.Instance) []string
	// Labels go on the Node at registration.
	Labels map[string]string
	// OS is the operating system the node's kubelet reports (nodes.Spec).
	OS string
	// NoKubelet creates only the instance.
	NoKubelet bool
}

// Machine is a created machine.
type Machine struct {
	Name     string
	Instance *clouddriver.Instance
	// Kubelet is nil when the request said NoKubelet.
	Kubelet *nodes.Kubelet
}

// Add creates an instance and starts its kubelet. On error nothing is left
// behind. The caller removes the machine with Delete (usually through
// DeferCleanup).
func (m *Machines) Add(ctx context.Context, req MachineRequest) (*Machine, error) {
	if req.Name == "" {
		req.Name = UniqueName("ccm-node")
	}
	if len(req.IPFamilies) == 0 {
		req.IPFamilies = m.ipFamilies
	}
	inst, err := m.driver.CreateInstance(ctx, clouddriver.CreateInstanceRequest{
		Name: req.Name, Zone: req.Zone, InstanceType: req.InstanceType, IPFamilies: req.IPFamilies,
	})
	if err != nil {
		return nil, fmt.Errorf("creating instance %s: %w", req.Name, err)
	}
	machine := &Machine{Name: inst.Name, Instance: inst}
	if req.NoKubelet {
		return machine, nil
	}
	spec := nodes.Spec{Name: inst.Name, Labels: req.Labels, OS: req.OS}
	if req.NodeIPs != nil {
		spec.NodeIPs = req.NodeIPs(inst)
	}
	machine.Kubelet, err = m.StartKubelet(ctx, spec)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting kubelet of %s: %w", inst.Name, err), m.Delete(ctx, inst.Name))
	}
	return machine, nil
}

// StartKubelet registers a Node for an instance that exists already (or
// for one that never existed, to see how the CCM treats it).
func (m *Machines) StartKubelet(ctx context.Context, spec nodes.Spec) (*nodes.Kubelet, error) {
	k, err := m.kubelets.Register(ctx, spec)
	if err != nil {
		return nil, err
	}
	if m.watch != nil {
		if err := m.watch.waitNode(ctx, spec.Name, true); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// Kubelet returns the simulated kubelet of a node.
func (m *Machines) Kubelet(name string) (*nodes.Kubelet, bool) { return m.kubelets.Get(name) }

// Delete removes the Node and deletes the instance. Either may be gone
// already.
func (m *Machines) Delete(ctx context.Context, name string) error {
	err := errors.Join(m.kubelets.Remove(ctx, name), m.deleteInstance(ctx, name))
	if err == nil && m.watch != nil {
		err = m.watch.waitNode(ctx, name, false)
	}
	return err
}

func (m *Machines) deleteInstance(ctx context.Context, name string) error {
	err := m.driver.DeleteInstance(ctx, name)
	if err != nil && !clouddriver.IsNotFound(err) {
		return fmt.Errorf("deleting instance %s: %w", name, err)
	}
	return nil
}

// UniqueName returns prefix plus a random suffix of five lowercase letters
// and digits, valid as a Node and Service name.
func UniqueName(prefix string) string {
	b := make([]byte, 5)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(uniqueAlphabet))))
		if err != nil {
			panic(err)
		}
		b[i] = uniqueAlphabet[n.Int64()]
	}
	return prefix + "-" + string(b)
}

// NameWithoutInstanceInput says how NameWithoutInstance picks names.
type NameWithoutInstanceInput struct {
	// Driver answers `instance get`. Required.
	Driver *clouddriver.Driver
	// Prefix of the names, as for UniqueName.
	Prefix string
	// Tries is how many names are tried; default 3.
	Tries int
	// NewName makes a name from the prefix; default UniqueName.
	NewName func(prefix string) string
}

// InstanceNamesTakenError is NameWithoutInstance's answer when every name
// it tried names an instance of the cloud.
type InstanceNamesTakenError struct {
	// Instances are what the cloud answered for each name tried.
	Instances []clouddriver.Instance
}

func (e *InstanceNamesTakenError) Error() string {
	names := make([]string, len(e.Instances))
	seen := make([]string, len(e.Instances))
	for i, in := range e.Instances {
		names[i] = in.Name
		seen[i] = fmt.Sprintf("%s (id %s, providerID %q)", in.Name, in.ID, in.ProviderID)
	}
	return fmt.Sprintf("node names %s: expected the cloud to have no instance of that name (instance get exits %d), saw instances %s: a name the cloud resolves cannot stand for an instance that never existed",
		strings.Join(names, ", "), clouddriver.ExitNotFound, strings.Join(seen, ", "))
}

// NameWithoutInstance returns a new node name that the cloud confirms no
// instance has: the driver's `instance get` says "no such object" (exit 3)
// for it. A cloud may resolve a name it never gave out (a DNS-like lookup,
// a name another cluster uses); a spec about an instance that never
// existed must not rely on chance. When every name tried is taken, the
// error is an *InstanceNamesTakenError naming the instances; any other
// answer of the driver is returned as it is.
func NameWithoutInstance(ctx context.Context, in NameWithoutInstanceInput) (string, error) {
	if in.Tries <= 0 {
		in.Tries = 3
	}
	if in.NewName == nil {
		in.NewName = UniqueName
	}
	taken := &InstanceNamesTakenError{}
	for range in.Tries {
		name := in.NewName(in.Prefix)
		inst, err := in.Driver.GetInstance(ctx, name)
		switch {
		case clouddriver.IsNotFound(err):
			return name, nil
		case err != nil:
			return "", fmt.Errorf("asking the cloud driver whether an instance is named %s: %w", name, err)
		}
		taken.Instances = append(taken.Instances, *inst)
	}
	return "", taken
}

// uniqueAlphabet is what UniqueName's suffixes are made of.
const uniqueAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// MachinePrefixes start the names of the instances (and their Nodes) the
// harness makes: machines a spec adds on simulated nodes, Nodes it
// registers on an existing cluster, and validate-driver's instance. With
// UniqueName's suffix they mark what `sweep` may remove.
var MachinePrefixes = []string{"ccm-node", "ccm-join", "ccmc-check"}

// IsUniqueName reports whether name is UniqueName(p) for one of prefixes:
// p, a dash and five letters of UniqueName's alphabet.
func IsUniqueName(name string, prefixes ...string) bool {
	for _, p := range prefixes {
		suffix, ok := strings.CutPrefix(name, p+"-")
		if ok && len(suffix) == 5 && strings.Trim(suffix, uniqueAlphabet) == "" {
			return true
		}
	}
	return false
}

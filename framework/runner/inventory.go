package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// inventory is what a world's cluster and cloud hold at one moment, as
// far as the specs can leave things behind: each kind maps an object's
// key to how a leftover is named in the run's failure.
type inventory struct {
	namespaces    map[string]string
	services      map[string]string
	nodes         map[string]string
	instances     map[string]string
	loadBalancers map[string]string
	// routes are keyed by name; routeNodes gives each one's node.
	routes     map[string]string
	routeNodes map[string]string
	// othersNamespaces are the namespaces the harness did not make: on a
	// shared cluster, what others run there (and their load balancers) is
	// none of the run's business.
	othersNamespaces map[string]bool
	// skipped names the kinds that are not compared: cloud kinds the driver
	// cannot list, and machines the harness does not own.
	skipped []string
}

// inventoryScope says what a world owns besides its own namespaces.
type inventoryScope struct {
	// machines: the world simulates its machines, so every Node and cloud
	// instance is its own. On a cluster of real machines, nodes come and
	// go (autoscalers, repairs) without the run, and are not compared.
	machines bool
}

// takeInventory lists the namespaces the harness made (framework.
// NamespaceLabel) that are not being deleted, the Services of all of them,
// the cluster's Nodes when the world owns its machines, and, through the
// cloud driver, the cloud's instances
// (again only when the world owns its machines), load balancers and
// routes (those the driver can list).
func takeInventory(ctx context.Context, client kubernetes.Interface, driver *clouddriver.Driver, scope inventoryScope) (*inventory, error) {
	inv := &inventory{
		namespaces: map[string]string{}, services: map[string]string{}, nodes: map[string]string{},
		instances: map[string]string{}, loadBalancers: map[string]string{}, routes: map[string]string{}, routeNodes: map[string]string{},
		othersNamespaces: map[string]bool{},
	}
	namespaces, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	for _, ns := range namespaces.Items {
		if ns.Labels[framework.NamespaceLabel] != "true" {
			inv.othersNamespaces[ns.Name] = true
			continue
		}
		if ns.DeletionTimestamp != nil {
			// Deleted: kube-controller-manager's namespace controller
			// removes it, after a fixed 5 s (namespaceDeletionGracePeriod)
			// and whatever it holds. Of that, what the CCM has a hand in,
			// the Services and their load balancers, is still counted.
			continue
		}
		inv.namespaces[ns.Name] = "namespace " + ns.Name
	}
	services, err := client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Services: %w", err)
	}
	for _, s := range services.Items {
		if inv.othersNamespaces[s.Namespace] {
			continue
		}
		what := fmt.Sprintf("Service %s/%s (type %s", s.Namespace, s.Name, s.Spec.Type)
		if len(s.Finalizers) > 0 {
			what += ", finalizers " + strings.Join(s.Finalizers, ",")
		}
		inv.services[s.Namespace+"/"+s.Name] = what + ")"
	}
	// Nodes are listed on every cluster: a new route counts as a leftover
	// only once its node is gone.
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	for _, n := range nodes.Items {
		inv.nodes[n.Name] = "node " + n.Name
	}
	if !scope.machines {
		inv.skipped = append(inv.skipped, machinesNotCompared)
	}
	if driver == nil {
		inv.skipped = append(inv.skipped, "the cloud (no cloud driver)")
		return inv, nil
	}
	switch {
	case !scope.machines:
		// Not compared (machinesNotCompared).
	case driver.Supports(clouddriver.VerbInstancesList):
		instances, err := driver.ListInstances(ctx)
		if err != nil {
			return nil, err
		}
		for _, in := range instances {
			inv.instances[in.Name] = fmt.Sprintf("cloud instance %s (id %s, %s)", in.Name, in.ID, in.State)
		}
	default:
		inv.skipped = append(inv.skipped, "instances")
	}
	if driver.Supports(clouddriver.VerbLoadBalancersList) {
		lbs, err := driver.ListLoadBalancers(ctx)
		if err != nil {
			return nil, err
		}
		for _, lb := range lbs {
			if inv.othersNamespaces[lb.ServiceNamespace] {
				continue // a load balancer of someone else's Service
			}
			what := "cloud load balancer " + lb.Name
			if lb.ServiceName != "" {
				what += fmt.Sprintf(" (of Service %s/%s)", lb.ServiceNamespace, lb.ServiceName)
			}
			inv.loadBalancers[lb.Name] = what
		}
	} else {
		inv.skipped = append(inv.skipped, "load balancers")
	}
	if driver.Supports(clouddriver.VerbRoutesList) {
		routes, err := driver.ListRoutes(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range routes {
			inv.routes[r.Name] = fmt.Sprintf("cloud route %s (%s to node %s)", r.Name, r.DestinationCIDR, r.NodeName)
			inv.routeNodes[r.Name] = r.NodeName
		}
	} else {
		inv.skipped = append(inv.skipped, "routes")
	}
	return inv, nil
}

// machinesNotCompared is the skipped entry of an inventory that does not
// compare Nodes and instances.
const machinesNotCompared = "nodes and instances (the cluster's machines are not the run's)"

// leftovers are what after holds and before did not: what the specs made
// and did not take away (or the CCM did not, for what it made on their
// behalf). A route that was not there before is a leftover only when its
// node is gone: the route controller programs routes for the cluster's
// own nodes whenever it gets to them. What went away is never a leftover.
func leftovers(before, after *inventory) []string {
	var out []string
	add := func(b, a map[string]string, keep func(key string) bool) {
		var kind []string
		for key, what := range a {
			if _, ok := b[key]; ok || (keep != nil && keep(key)) {
				continue
			}
			kind = append(kind, what)
		}
		sort.Strings(kind)
		out = append(out, kind...)
	}
	add(before.namespaces, after.namespaces, nil)
	add(before.services, after.services, nil)
	if !slices.Contains(after.skipped, machinesNotCompared) {
		add(before.nodes, after.nodes, nil)
	}
	add(before.instances, after.instances, nil)
	add(before.loadBalancers, after.loadBalancers, nil)
	add(before.routes, after.routes, func(name string) bool {
		_, nodeExists := after.nodes[after.routeNodes[name]]
		return nodeExists
	})
	return out
}

// inventoryScope is what the world owns: its machines, when it simulates
// them.
func (w *world) inventoryScope() inventoryScope {
	return inventoryScope{machines: w.machines != nil}
}

// leftoversPoll is how often the leak check looks again while things are
// still going.
const leftoversPoll = 100 * time.Millisecond

// checkLeftovers waits, up to the profile's leftoversGone, until the
// world holds nothing that it did not hold in before; then it returns
// nil, else a *LeakError naming every leftover. Namespaces still being
// deleted, and the load balancers of their Services, get that long to go.
func (w *world) checkLeftovers(ctx context.Context, before *inventory) error {
	timeout := w.profile.Timeout(profile.LeftoversGone)
	deadline := time.Now().Add(timeout)
	for {
		after, err := takeInventory(ctx, w.client, w.driver, w.inventoryScope())
		if err != nil {
			return &SetupError{Step: "leak check", Err: err}
		}
		left := leftovers(before, after)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return &LeakError{Leftovers: left, Waited: timeout}
		}
		select {
		case <-ctx.Done():
			return nil // interrupted: the run says so already
		case <-time.After(leftoversPoll):
		}
	}
}

// LeakError is a world that still held things after its specs that it did
// not hold before them, once the profile's leftoversGone had passed:
// namespaces, Services, Nodes, cloud instances, load balancers or routes
// that the specs (or the CCM, on their behalf) did not take away.
type LeakError struct {
	// Leftovers name each thing left behind, such as "cloud load balancer
	// a1b2... (of Service ns/web)".
	Leftovers []string
	// Waited is how long they were given to go.
	Waited time.Duration
}

func (e *LeakError) Error() string {
	return fmt.Sprintf("the specs left %d thing(s) behind, still there %s after the last spec (timeouts.%s): %s",
		len(e.Leftovers), e.Waited, profile.LeftoversGone, strings.Join(e.Leftovers, "; "))
}

// asLeak returns the *LeakError in err, if any.
func asLeak(err error) *LeakError {
	var le *LeakError
	if errors.As(err, &le) {
		return le
	}
	return nil
}

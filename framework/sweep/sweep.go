// Package sweep removes what earlier runs of the harness left behind on a
// cluster and in its cloud (`ccm-conformance sweep`, docs/cloud-driver.md
// "Sweeping"): a run that was killed, or a CI job that was aborted, never
// reached its cleanup. Everything the harness makes is recognizable: its
// namespaces carry framework.NamespaceLabel, its machines and Nodes are
// named framework.UniqueName of one of framework.MachinePrefixes, and
// validate-driver's route covers 198.18.255.0/24. Sweep removes those and
// nothing else, the cloud's through the cloud driver; the load balancers
// of the harness's Services go when the CCM sees their namespaces go, and
// one that stays is reported, never deleted behind the CCM's back (the
// protocol has no verb for it).
//
// It must not run while a run uses the cluster: it would take that run's
// namespaces and machines.
//
// Floor: the framework. It stands on the leaves and links no suite, report,
// check, backend, provider or command; testsupport/floors holds that.
package sweep

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccm-conformance/ccm-conformance/framework"
	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
)

// CheckRouteCIDR is the destination of validate-driver's route (RFC 2544's
// benchmarking range), which no cluster uses.
const CheckRouteCIDR = "198.18.255.0/24"

// Options say what to sweep.
type Options struct {
	// Client is the cluster; nil sweeps the cloud only.
	Client kubernetes.Interface
	// Driver is the cloud; nil sweeps the cluster only.
	Driver *clouddriver.Driver
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
	// Wait bounds the wait for the harness's namespaces to go and the
	// CCM to delete their load balancers. Default 5 minutes.
	Wait time.Duration
	// Poll is how often the wait looks again. Default 2 s.
	Poll time.Duration
	// Out receives a line per object.
	Out io.Writer
}

// Report is what a sweep did.
type Report struct {
	// Removed names each object removed (or, in a dry run, to remove).
	Removed []string
	// Left names each leftover sweep could not remove, and why.
	Left []string
}

// Run sweeps. An error is a failure to list or remove (the API or the
// driver failed); objects it may not remove are Report.Left.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Wait <= 0 {
		o.Wait = 5 * time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	s := &sweeper{o: o, rep: &Report{}}
	var namespaces []string
	if o.Client != nil {
		var err error
		if namespaces, err = s.namespaces(ctx); err != nil {
			return s.rep, err
		}
		if err := s.nodes(ctx); err != nil {
			return s.rep, err
		}
	}
	if o.Driver != nil {
		if err := s.instances(ctx); err != nil {
			return s.rep, err
		}
		if err := s.routes(ctx); err != nil {
			return s.rep, err
		}
	}
	if !o.DryRun && o.Client != nil {
		if err := s.waitGone(ctx, namespaces); err != nil {
			return s.rep, err
		}
	}
	if o.Driver != nil {
		if err := s.loadBalancers(ctx); err != nil {
			return s.rep, err
		}
	}
	return s.rep, nil
}

type sweeper struct {
	o   Options
	rep *Report
}

func (s *sweeper) removed(what string) {
	s.rep.Removed = append(s.rep.Removed, what)
	verb := "removed"
	if s.o.DryRun {
		verb = "would remove"
	}
	fmt.Fprintf(s.o.Out, "%s %s\n", verb, what)
}

func (s *sweeper) left(what string) {
	s.rep.Left = append(s.rep.Left, what)
	fmt.Fprintf(s.o.Out, "left %s\n", what)
}

// namespaces deletes the harness's namespaces and returns their names.
func (s *sweeper) namespaces(ctx context.Context) ([]string, error) {
	list, err := s.o.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: framework.NamespaceLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing the harness's namespaces: %w", err)
	}
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
		if !s.o.DryRun && ns.DeletionTimestamp == nil {
			if err := s.o.Client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
			}
		}
		s.removed("namespace " + ns.Name)
	}
	return names, nil
}

// nodes deletes the Nodes of the harness's machines.
func (s *sweeper) nodes(ctx context.Context) error {
	list, err := s.o.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Nodes: %w", err)
	}
	for _, n := range list.Items {
		if !framework.IsUniqueName(n.Name, framework.MachinePrefixes...) {
			continue
		}
		if !s.o.DryRun {
			if err := s.o.Client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting Node %s: %w", n.Name, err)
			}
		}
		s.removed("Node " + n.Name)
	}
	return nil
}

// instances deletes the harness's machines in the cloud.
func (s *sweeper) instances(ctx context.Context) error {
	d := s.o.Driver
	if !d.Supports(clouddriver.VerbInstancesList) {
		return nil
	}
	list, err := d.ListInstances(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	for _, in := range list {
		if !framework.IsUniqueName(in.Name, framework.MachinePrefixes...) {
			continue
		}
		what := fmt.Sprintf("instance %s (%s)", in.Name, in.ID)
		if !d.Supports(clouddriver.VerbInstanceDelete) {
			s.left(what + `: the cloud driver does not implement "instance delete"; delete it in the cloud`)
			continue
		}
		if !s.o.DryRun {
			if err := d.DeleteInstance(ctx, in.Name); err != nil && !clouddriver.IsNotFound(err) {
				return fmt.Errorf("deleting %s: %w", what, err)
			}
		}
		s.removed(what)
	}
	return nil
}

// routes deletes the routes to the harness's machines and validate-driver's.
func (s *sweeper) routes(ctx context.Context) error {
	d := s.o.Driver
	if !d.Supports(clouddriver.VerbRoutesList) {
		return nil
	}
	list, err := d.ListRoutes(ctx)
	if err != nil {
		return fmt.Errorf("listing routes: %w", err)
	}
	for _, r := range list {
		if !framework.IsUniqueName(r.NodeName, framework.MachinePrefixes...) && r.DestinationCIDR != CheckRouteCIDR {
			continue
		}
		what := fmt.Sprintf("route %s (%s to %s)", r.Name, r.DestinationCIDR, r.NodeName)
		if !d.Supports(clouddriver.VerbRouteDelete) {
			s.left(what + `: the cloud driver does not implement "route delete"; delete it in the cloud`)
			continue
		}
		if !s.o.DryRun {
			if err := d.DeleteRoute(ctx, r.Name); err != nil && !clouddriver.IsNotFound(err) {
				return fmt.Errorf("deleting %s: %w", what, err)
			}
		}
		s.removed(what)
	}
	return nil
}

// waitGone waits until the namespaces are gone (their Services' finalizers
// let go once the CCM deleted their load balancers).
func (s *sweeper) waitGone(ctx context.Context, namespaces []string) error {
	deadline := time.Now().Add(s.o.Wait)
	for len(namespaces) > 0 {
		namespaces = slices.DeleteFunc(namespaces, func(name string) bool {
			_, err := s.o.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		if len(namespaces) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, ns := range namespaces {
				s.left(fmt.Sprintf("namespace %s: still terminating after %s (a Service whose load balancer the CCM has not deleted keeps it)", ns, s.o.Wait))
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(s.o.Poll):
		}
	}
	return nil
}

// loadBalancers reports the load balancers the cloud still has for the
// harness's Services: the CCM deletes a load balancer when its Service
// goes, and nothing else may.
func (s *sweeper) loadBalancers(ctx context.Context) error {
	d := s.o.Driver
	if !d.Supports(clouddriver.VerbLoadBalancersList) {
		return nil
	}
	list, err := d.ListLoadBalancers(ctx)
	if err != nil {
		return fmt.Errorf("listing load balancers: %w", err)
	}
	for _, lb := range list {
		if !isHarnessNamespace(lb.ServiceNamespace) {
			continue
		}
		what := fmt.Sprintf("load balancer %s of Service %s/%s", lb.Name, lb.ServiceNamespace, lb.ServiceName)
		if s.o.DryRun {
			fmt.Fprintf(s.o.Out, "would leave %s to the CCM, which deletes it when the namespace goes\n", what)
			continue
		}
		s.left(what + ": the CCM did not delete it when its namespace went; delete it in the cloud")
	}
	return nil
}

// isHarnessNamespace reports whether a namespace name is one the harness
// makes (framework.CreateNamespace: "ccm-" and a spec's prefix, then
// UniqueName's suffix), for load balancers whose namespace is gone.
func isHarnessNamespace(name string) bool {
	i := strings.LastIndex(name, "-")
	return strings.HasPrefix(name, "ccm-") && i > len("ccm-") && framework.IsUniqueName(name, name[:i])
}

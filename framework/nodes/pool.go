package nodes

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Pool owns the simulated kubelets of one run.
type Pool struct {
	client kubernetes.Interface
	opts   Options

	mu       sync.Mutex
	kubelets map[string]*Kubelet
	watch    *proxyWatch
}

// NewPool returns an empty pool whose kubelets talk to the cluster through
// client.
func NewPool(client kubernetes.Interface, opts Options) *Pool {
	return &Pool{client: client, opts: opts.withDefaults(), kubelets: map[string]*Kubelet{}}
}

// Register starts a simulated kubelet, which registers its Node.
func (p *Pool) Register(ctx context.Context, spec Spec) (*Kubelet, error) {
	if spec.Name == "" {
		return nil, errors.New("simulated node needs a name")
	}
	p.mu.Lock()
	if _, ok := p.kubelets[spec.Name]; ok {
		p.mu.Unlock()
		return nil, fmt.Errorf("simulated node %s is already registered", spec.Name)
	}
	if p.opts.ServeNodePorts && p.watch == nil {
		w, err := startProxyWatch(p)
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		p.watch = w
	}
	k := &Kubelet{spec: spec, client: p.client, opts: p.opts, watch: p.watch}
	p.kubelets[spec.Name] = k
	p.mu.Unlock()

	if err := k.register(ctx); err != nil {
		p.mu.Lock()
		delete(p.kubelets, spec.Name)
		p.mu.Unlock()
		if k.registered {
			// The machine did not come up whole: its Node goes too.
			err = errors.Join(err, p.Remove(ctx, spec.Name))
		}
		return nil, err
	}
	return k, nil
}

// Get returns the named kubelet.
func (p *Pool) Get(name string) (*Kubelet, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k, ok := p.kubelets[name]
	return k, ok
}

// Names lists the kubelets, sorted.
func (p *Pool) Names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.kubelets))
	for n := range p.kubelets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Remove stops the named kubelet and deletes its Node and Lease, as when a
// machine is decommissioned. A Node already gone is not an error.
func (p *Pool) Remove(ctx context.Context, name string) error {
	p.mu.Lock()
	k, ok := p.kubelets[name]
	delete(p.kubelets, name)
	p.mu.Unlock()
	if ok {
		k.Stop()
	}
	err := p.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", name, err)
	}
	err = p.client.CoordinationV1().Leases(LeaseNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting lease of node %s: %w", name, err)
	}
	return nil
}

// Close stops every kubelet, deletes their Nodes, and stops watching.
func (p *Pool) Close(ctx context.Context) error {
	var errs []error
	for _, name := range p.Names() {
		errs = append(errs, p.Remove(ctx, name))
	}
	p.mu.Lock()
	if p.watch != nil {
		close(p.watch.stop)
		p.watch = nil
	}
	p.mu.Unlock()
	return errors.Join(errs...)
}

// RemoveSimulated deletes every Node a simulated kubelet registered (they
// carry ManagedByLabel) and returns their names: what an earlier run on
// the same cluster left behind.
func RemoveSimulated(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: ManagedByLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing simulated nodes: %w", err)
	}
	var removed []string
	var errs []error
	for _, n := range list.Items {
		err := client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting node %s: %w", n.Name, err))
			continue
		}
		removed = append(removed, n.Name)
	}
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}

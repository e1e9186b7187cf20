package framework

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ccm-conformance/ccm-conformance/labels"
)

// WatchPollInterval is how often a watched wait (Framework.Eventually,
// Framework.Consistently) looks at the objects the watch keeps. It costs
// no request to the API server, so it can be short: the harness sees a
// change within this interval of the watch delivering it.
const WatchPollInterval = 10 * time.Millisecond

// Watch keeps the cluster's Nodes and Services as the harness last heard
// of them, from one watch each, and when each version arrived. Specs read
// them through a View inside Framework.Eventually and Framework.Consistently.
type Watch struct {
	factory  informers.SharedInformerFactory
	nodes    cache.SharedIndexInformer
	services cache.SharedIndexInformer

	mu       sync.Mutex
	arrivals map[string]arrival // by "Kind/namespace/name"
	// deletions are when the watch delivered each object's deletion, by
	// the same key, so that a wait that passes on an object being gone
	// can say how long after its deletion it returned.
	deletions map[string]time.Time
}

type arrival struct {
	resourceVersion string
	at              time.Time
	// recent are the object's last resourceVersions, newest last, so that
	// a spec can wait for the watch to deliver what it wrote.
	recent []string
}

// recentVersions is how many versions of an object the watch remembers.
const recentVersions = 32

// watchCatchUp bounds the wait for the watch to deliver a version the
// harness itself wrote; it takes milliseconds.
const watchCatchUp = 30 * time.Second

// StartWatch starts watching Nodes and Services and returns once the first
// lists are in. The watch ends with ctx.
func StartWatch(ctx context.Context, client kubernetes.Interface) (*Watch, error) {
	w := &Watch{factory: informers.NewSharedInformerFactory(client, 0), arrivals: map[string]arrival{}, deletions: map[string]time.Time{}}
	w.nodes = w.factory.Core().V1().Nodes().Informer()
	w.services = w.factory.Core().V1().Services().Informer()
	for kind, inf := range map[string]cache.SharedIndexInformer{"Node": w.nodes, "Service": w.services} {
		// The transform runs as each version arrives, before the cache
		// holds it, so a View never reads a version without its arrival.
		if err := inf.SetTransform(func(obj any) (any, error) {
			w.arrived(kind, obj)
			return obj, nil
		}); err != nil {
			return nil, fmt.Errorf("watching %ss: %w", kind, err)
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj any) { w.deleted(kind, obj) },
		}); err != nil {
			return nil, fmt.Errorf("watching %ss: %w", kind, err)
		}
	}
	w.factory.Start(ctx.Done())
	for typ, ok := range w.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("watching %v: the first list did not arrive", typ)
		}
	}
	return w, nil
}

// keyOf returns an object's key in arrivals and deletions, and its
// resourceVersion.
func keyOf(kind string, obj any) (key, resourceVersion string, ok bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", "", false
	}
	return objectKey(kind, m.GetNamespace(), m.GetName()), m.GetResourceVersion(), true
}

func (w *Watch) arrived(kind string, obj any) {
	key, rv, ok := keyOf(kind, obj)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	recent := append(w.arrivals[key].recent, rv)
	if len(recent) > recentVersions {
		recent = recent[len(recent)-recentVersions:]
	}
	w.arrivals[key] = arrival{rv, time.Now(), recent}
}

// deleted records when an object's deletion arrived. The handler runs once
// the cache has dropped the object; the transform saw the deletion before
// that, as the object's last version, and its time is the arrival. A
// deletion the informer only inferred from a new list (a tombstone) has
// no version of its own: it arrived now.
func (w *Watch) deleted(kind string, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	key, rv, ok := keyOf(kind, obj)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	at := time.Now()
	if a, ok := w.arrivals[key]; ok && a.resourceVersion == rv {
		at = a.at
	}
	w.deletions[key] = at
}

// deletionOf returns when an object's deletion arrived, if the watch has
// delivered one.
func (w *Watch) deletionOf(kind, namespace, name string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.deletions[objectKey(kind, namespace, name)]
	return at, ok
}

// seen reports whether the watch has delivered this version of an object.
func (w *Watch) seen(kind string, m metav1.Object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.arrivals[objectKey(kind, m.GetNamespace(), m.GetName())].recent, m.GetResourceVersion())
}

// waitSeen returns once the watch has delivered this version of an object
// (the harness wrote it and got it back), so that what a View shows next
// is not older than the write.
func (w *Watch) waitSeen(ctx context.Context, kind string, m metav1.Object) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, watchCatchUp)
	defer cancel()
	for !w.seen(kind, m) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s: expected the watch to deliver version %s, which the harness wrote, saw %s after %s",
				kind, describe(m), m.GetResourceVersion(), w.latestVersion(kind, m), time.Since(start).Round(time.Millisecond))
		case <-time.After(WatchPollInterval):
		}
	}
	return nil
}

// latestVersion says which version of an object the watch delivered last.
func (w *Watch) latestVersion(kind string, m metav1.Object) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.arrivals[objectKey(kind, m.GetNamespace(), m.GetName())]
	if !ok {
		return "no version of it"
	}
	return fmt.Sprintf("version %s last, %s ago", a.resourceVersion, time.Since(a.at).Round(time.Millisecond))
}

// waitNode returns once the watch has the Node (present) or no longer has
// it, so that what a View shows next agrees with what the harness did.
func (w *Watch) waitNode(ctx context.Context, name string, present bool) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, watchCatchUp)
	defer cancel()
	for {
		_, ok, err := w.nodes.GetStore().GetByKey(name)
		if err == nil && ok == present {
			return nil
		}
		select {
		case <-ctx.Done():
			expected, seen := "registered", "no such Node"
			if !present {
				expected, seen = "gone", "it still there"
			}
			if err != nil {
				seen = "an error reading its store: " + err.Error()
			}
			return fmt.Errorf("node %s: expected the watch to show it %s, saw %s after %s",
				name, expected, seen, time.Since(start).Round(time.Millisecond))
		case <-time.After(WatchPollInterval):
		}
	}
}

func describe(m metav1.Object) string {
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// NodeWritten returns once the watch shows the Node as it was written (or
// later): call it after changing a Node, before a watched wait compares
// anything with it.
func (f *Framework) NodeWritten(ctx context.Context, n *corev1.Node) error {
	return f.Watch.waitSeen(ctx, "Node", n)
}

// ServiceWritten returns once the watch shows the Service as it was written
// (or later): call it after creating or changing a Service.
func (f *Framework) ServiceWritten(ctx context.Context, svc *corev1.Service) error {
	return f.Watch.waitSeen(ctx, "Service", svc)
}

func objectKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// arrivalOf returns when the version of an object arrived, if it is the
// latest one known.
func (w *Watch) arrivalOf(kind string, m interface {
	GetNamespace() string
	GetName() string
	GetResourceVersion() string
}) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.arrivals[objectKey(kind, m.GetNamespace(), m.GetName())]
	if !ok || a.resourceVersion != m.GetResourceVersion() {
		return time.Time{}, false
	}
	return a.at, true
}

// View is what one look of a watched wait reads. It remembers which
// version of which object it handed out, so that the wait can tell how
// long after their arrival it saw them.
type View struct {
	w    *Watch
	read []time.Time // arrival of each object read
	// unknownArrival is set when the View reported an object absent whose
	// deletion it has no time for: it never existed, or the handler that
	// records deletions has not run yet. A wait that passes on such a look
	// records no observation lag, since it cannot say what it waited for.
	unknownArrival bool
}

// Node returns a copy of the Node as last watched, or a NotFound error.
func (v *View) Node(name string) (*corev1.Node, error) {
	obj, ok, err := v.w.nodes.GetStore().GetByKey(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		v.noteGone("Node", "", name)
		return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
	}
	n := obj.(*corev1.Node).DeepCopy()
	v.note("Node", n)
	return n, nil
}

// Nodes returns copies of every Node as last watched, sorted by name.
func (v *View) Nodes() []corev1.Node {
	objs := v.w.nodes.GetStore().List()
	out := make([]corev1.Node, 0, len(objs))
	for _, obj := range objs {
		n := obj.(*corev1.Node)
		v.note("Node", n)
		out = append(out, *n.DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Service returns a copy of the Service as last watched, or a NotFound
// error.
func (v *View) Service(namespace, name string) (*corev1.Service, error) {
	obj, ok, err := v.w.services.GetStore().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !ok {
		v.noteGone("Service", namespace, name)
		return nil, apierrors.NewNotFound(corev1.Resource("services"), namespace+"/"+name)
	}
	s := obj.(*corev1.Service).DeepCopy()
	v.note("Service", s)
	return s, nil
}

func (v *View) note(kind string, m interface {
	GetNamespace() string
	GetName() string
	GetResourceVersion() string
}) {
	if at, ok := v.w.arrivalOf(kind, m); ok {
		v.read = append(v.read, at)
	}
}

// noteGone notes the arrival of the deletion of an object the View found
// absent.
func (v *View) noteGone(kind, namespace, name string) {
	if at, ok := v.w.deletionOf(kind, namespace, name); ok {
		v.read = append(v.read, at)
		return
	}
	v.unknownArrival = true
}

// latest is the arrival of the newest version or deletion read.
func (v *View) latest() time.Time {
	var t time.Time
	for _, at := range v.read {
		if at.After(t) {
			t = at
		}
	}
	return t
}

// Eventually waits, as gomega's Eventually, until check passes on the
// watched objects, looking every WatchPollInterval. The caller sets the
// timeout and the assertion: f.Eventually(ctx, check).WithTimeout(...).
// Should(Succeed()). When the check passes on an object version or
// deletion that arrived after the wait began, the time from its arrival to
// now is recorded as the spec's observation lag; not when it passes on an
// absence the watch has no deletion time for.
//
// The check must read the cluster only through the View: a request to the
// API server or a cloud driver call would run every WatchPollInterval.
func (f *Framework) Eventually(ctx context.Context, check func(g gomega.Gomega, v *View)) gomega.AsyncAssertion {
	start := time.Now()
	return gomega.Eventually(ctx, func(g gomega.Gomega) {
		v := &View{w: f.Watch}
		check(g, v) // a failed assertion ends the look here
		if changed := v.latest(); !v.unknownArrival && changed.After(start) {
			ginkgo.AddReportEntry(labels.EntryObservationLag, time.Since(changed), ginkgo.ReportEntryVisibilityNever)
		}
	}).WithPolling(WatchPollInterval)
}

// Consistently checks, as gomega's Consistently, that check keeps passing
// on the watched objects, looking every WatchPollInterval. The caller sets
// the duration and the assertion.
func (f *Framework) Consistently(ctx context.Context, check func(g gomega.Gomega, v *View)) gomega.AsyncAssertion {
	return gomega.Consistently(ctx, func(g gomega.Gomega) {
		check(g, &View{w: f.Watch})
	}).WithPolling(WatchPollInterval)
}

// View returns a View for reads outside a watched wait: a wait that also
// asks the cloud driver, and so polls at the profile's pollInterval.
func (f *Framework) View() *View { return &View{w: f.Watch} }

package nodes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// The simulated kube-proxy: a running simulated kubelet answers on its
// node's InternalIP IPv4 at every Service NodePort with a line of its
// node's name and the Service that owns the port ("n1 ns/web", ProxyAnswer),
// so that traffic sent through a cloud load balancer shows which node it
// reached and for which Service: a load balancer that forwards to another
// Service's node port is seen to. For Services with externalTrafficPolicy Local it also serves the
// health check node port, answering 200 as kube-proxy does for a node with
// local endpoints. Only loopback node IPs (127.0.0.0/8) can be served: they
// are the only addresses this machine answers on without configuration.

// portKey identifies one listener of a node.
type portKey struct {
	protocol corev1.Protocol // TCP, UDP, or "HTTP" for a health check port
	port     int32
}

// HealthCheckProtocol marks the health check listener in a portKey.
const healthCheckProtocol corev1.Protocol = "HTTP"

// proxyWatch holds the informers the simulated kube-proxies read.
type proxyWatch struct {
	services corelisters.ServiceLister
	nodes    corelisters.NodeLister
	stop     chan struct{}
}

func startProxyWatch(p *Pool) (*proxyWatch, error) {
	factory := informers.NewSharedInformerFactory(p.client, 0)
	w := &proxyWatch{
		services: factory.Core().V1().Services().Lister(),
		nodes:    factory.Core().V1().Nodes().Lister(),
		stop:     make(chan struct{}),
	}
	factory.Start(w.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			close(w.stop)
			return nil, fmt.Errorf("simulated kube-proxy: informer for %v did not sync", typ)
		}
	}
	return w, nil
}

// desiredPorts lists what a node must answer on.
func (w *proxyWatch) desiredPorts() (map[portKey]bool, error) {
	services, err := w.services.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	want := map[portKey]bool{}
	for _, svc := range services {
		for _, port := range svc.Spec.Ports {
			if port.NodePort != 0 {
				proto := port.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				want[portKey{proto, port.NodePort}] = true
			}
		}
		if svc.Spec.HealthCheckNodePort != 0 {
			want[portKey{healthCheckProtocol, svc.Spec.HealthCheckNodePort}] = true
		}
	}
	return want, nil
}

// owner names the Service whose node port k is ("ns/name"), or "" when
// none is: the answer is read when a connection comes, so a node port
// that passed to another Service answers for its new owner.
func (w *proxyWatch) owner(k portKey) string {
	services, err := w.services.List(labels.Everything())
	if err != nil {
		return ""
	}
	for _, svc := range services {
		for _, port := range svc.Spec.Ports {
			proto := port.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			if port.NodePort == k.port && proto == k.protocol {
				return svc.Namespace + "/" + svc.Name
			}
		}
	}
	return ""
}

// ProxyAnswer is the line the simulated kube-proxy of node answers with at
// a node port of service ("ns/name"), without its newline.
func ProxyAnswer(node, service string) string { return node + " " + service }

// ParseProxyAnswer splits a simulated kube-proxy's answer into the node
// and the Service; ok is false for anything else.
func ParseProxyAnswer(answer string) (node, service string, ok bool) {
	node, service, ok = strings.Cut(strings.TrimSpace(answer), " ")
	return node, service, ok && node != "" && strings.Contains(service, "/")
}

// nodeIPv4 is the node's first InternalIP IPv4 that this machine can serve.
func (w *proxyWatch) nodeIPv4(name string) (net.IP, bool) {
	node, err := w.nodes.Get(name)
	if err != nil {
		return nil, false
	}
	for _, a := range node.Status.Addresses {
		ip := net.ParseIP(a.Address)
		if a.Type == corev1.NodeInternalIP && ip != nil && ip.To4() != nil && ip.IsLoopback() {
			return ip, true
		}
	}
	return nil, false
}

// proxy is one node's set of listeners.
type proxy struct {
	node      string
	watch     *proxyWatch
	ip        net.IP
	listeners map[portKey]func()
}

func newProxy(node string, w *proxyWatch) *proxy {
	return &proxy{node: node, watch: w, listeners: map[portKey]func(){}}
}

// run reconciles the listeners until ctx ends, then closes them all.
func (p *proxy) run(ctx context.Context, interval time.Duration) {
	logger := logr.FromContextOrDiscard(ctx).WithValues("node", p.node)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	defer p.closeAll()
	for {
		if err := p.reconcile(); err != nil {
			logger.V(2).Info("Simulated kube-proxy could not reconcile", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (p *proxy) closeAll() {
	for k, closeFn := range p.listeners {
		closeFn()
		delete(p.listeners, k)
	}
}

func (p *proxy) reconcile() error {
	ip, ok := p.watch.nodeIPv4(p.node)
	if !ok {
		p.closeAll()
		return nil
	}
	if !ip.Equal(p.ip) {
		p.closeAll()
		p.ip = ip
	}
	want, err := p.watch.desiredPorts()
	if err != nil {
		return err
	}
	for k, closeFn := range p.listeners {
		if !want[k] {
			closeFn()
			delete(p.listeners, k)
		}
	}
	var errs []error
	for k := range want {
		if _, ok := p.listeners[k]; ok {
			continue
		}
		closeFn, err := p.listen(k)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.listeners[k] = closeFn
	}
	return errors.Join(errs...)
}

func (p *proxy) listen(k portKey) (func(), error) {
	addr := net.JoinHostPort(p.ip.String(), strconv.Itoa(int(k.port)))
	reply := func() []byte { return []byte(ProxyAnswer(p.node, p.watch.owner(k)) + "\n") }
	switch k.protocol {
	case corev1.ProtocolTCP:
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, err
		}
		go func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				_, _ = conn.Write(reply())
				_ = conn.Close()
			}
		}()
		return func() { _ = l.Close() }, nil
	case corev1.ProtocolUDP:
		conn, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, err
		}
		go func() {
			buf := make([]byte, 2048)
			for {
				_, from, err := conn.ReadFrom(buf)
				if err != nil {
					return
				}
				_, _ = conn.WriteTo(reply(), from)
			}
		}()
		return func() { _ = conn.Close() }, nil
	case healthCheckProtocol:
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, err
		}
		srv := &http.Server{
			ReadHeaderTimeout: 5 * time.Second,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"node":%q,"localEndpoints":1}`, p.node)
			}),
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); _ = srv.Serve(l) }()
		return func() { _ = srv.Close(); wg.Wait() }, nil
	}
	return nil, fmt.Errorf("unsupported protocol %s", k.protocol)
}

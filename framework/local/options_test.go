package local

import (
	"crypto/x509"
	"encoding/pem"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOptionsDefaults(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.KubernetesVersion != "v1.37.2" || o.EtcdVersion != "v3.6.16" {
		t.Errorf("versions = %s, %s", o.KubernetesVersion, o.EtcdVersion)
	}
	if !slices.Equal(o.ClusterCIDRs, []string{"10.244.0.0/16", "fd00:10:244::/56"}) {
		t.Errorf("ClusterCIDRs = %v", o.ClusterCIDRs)
	}
	if !slices.Equal(o.ServiceCIDRs, []string{"10.96.0.0/16", "fd00:10:96::/112"}) {
		t.Errorf("ServiceCIDRs = %v", o.ServiceCIDRs)
	}
	if o.NodeCIDRMaskSizeIPv4 != 24 || o.NodeCIDRMaskSizeIPv6 != 64 {
		t.Errorf("mask sizes = %d, %d", o.NodeCIDRMaskSizeIPv4, o.NodeCIDRMaskSizeIPv6)
	}
	if o.NodeMonitorGracePeriod != 5*time.Second || o.ReadyTimeout != DefaultReadyTimeout || o.StopGracePeriod != DefaultStopGracePeriod {
		t.Errorf("durations = %s, %s, %s", o.NodeMonitorGracePeriod, o.ReadyTimeout, o.StopGracePeriod)
	}
	if o.Progress == nil {
		t.Error("Progress is nil")
	}
}

func TestOptionsValidation(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{name: "three pod networks", opts: Options{ClusterCIDRs: []string{"10.244.0.0/16", "fd00:10:244::/56", "10.245.0.0/16"}}, wantErr: "ClusterCIDRs"},
		{name: "an IPv4-mapped pod network", opts: Options{ClusterCIDRs: []string{"::ffff:10.244.0.0/112"}}, wantErr: "IPv4-mapped"},
		{name: "families swapped", opts: Options{ClusterCIDRs: []string{"fd00:10:244::/56", "10.244.0.0/16"}}, wantErr: "IPv4 network then an IPv6"},
		{name: "two IPv4 services", opts: Options{ServiceCIDRs: []string{"10.96.0.0/16", "10.97.0.0/16"}}, wantErr: "ServiceCIDRs"},
		{name: "not a CIDR", opts: Options{ServiceCIDRs: []string{"10.96.0.0", "fd00:10:96::/112"}}, wantErr: "ServiceCIDRs"},
		{name: "host bits", opts: Options{ClusterCIDRs: []string{"10.244.0.1/16", "fd00:10:244::/56"}}, wantErr: "did you mean 10.244.0.0/16"},
		{name: "node mask wider than the cluster", opts: Options{NodeCIDRMaskSizeIPv4: 8}, wantErr: "NodeCIDRMaskSizeIPv4 8"},
		{name: "node mask too long", opts: Options{NodeCIDRMaskSizeIPv6: 129}, wantErr: "NodeCIDRMaskSizeIPv6 129"},
		{name: "negative grace period", opts: Options{NodeMonitorGracePeriod: -time.Second}, wantErr: "NodeMonitorGracePeriod"},
		{name: "IPv4 pods only", opts: Options{ClusterCIDRs: []string{"10.244.0.0/16"}, NodeCIDRMaskSizeIPv6: 200}},
		{name: "IPv6 pods only", opts: Options{ClusterCIDRs: []string{"fd00:10:244::/56"}, NodeCIDRMaskSizeIPv4: 99}},
		{name: "custom and valid", opts: Options{
			ClusterCIDRs: []string{"10.100.0.0/14", "fd00:1::/48"}, ServiceCIDRs: []string{"10.0.0.0/24", "fd00:2::/120"},
			NodeCIDRMaskSizeIPv4: 26, NodeCIDRMaskSizeIPv6: 80,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.opts.withDefaults()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// flagValue returns the value of --name=value in args, and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func TestComponentFlags(t *testing.T) {
	o, err := Options{
		ClusterCIDRs:           []string{"10.100.0.0/14", "fd00:1::/48"},
		ServiceCIDRs:           []string{"10.0.0.0/24", "fd00:2::/120"},
		NodeCIDRMaskSizeIPv4:   26,
		NodeCIDRMaskSizeIPv6:   80,
		NodeMonitorGracePeriod: 7 * time.Second,
	}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{opts: o, dir: "/d", pki: &pki{dir: "/d/pki"}}
	api := c.apiServerArgs("http://127.0.0.1:2379", 6443)
	kcm := c.controllerManagerArgs("/d/kcm.kubeconfig", 10257)
	etcd := c.etcdArgs(2379, 2380)

	tests := []struct {
		args        []string
		flag, value string
	}{
		{etcd, "data-dir", "/d/etcd"},
		{etcd, "listen-client-urls", "http://127.0.0.1:2379"},
		{etcd, "initial-cluster", "local=http://127.0.0.1:2380"},
		{api, "etcd-servers", "http://127.0.0.1:2379"},
		{api, "bind-address", "127.0.0.1"},
		{api, "secure-port", "6443"},
		{api, "advertise-address", "127.0.0.1"},
		{api, "endpoint-reconciler-type", "none"},
		{api, "client-ca-file", "/d/pki/ca.crt"},
		{api, "service-account-key-file", "/d/pki/sa.pub"},
		{api, "service-account-signing-key-file", "/d/pki/sa.key"},
		{api, "service-account-issuer", serviceAccountIssuer},
		{api, "authorization-mode", "Node,RBAC"},
		{api, "service-cluster-ip-range", "10.0.0.0/24,fd00:2::/120"},
		{kcm, "kubeconfig", "/d/kcm.kubeconfig"},
		{kcm, "secure-port", "10257"},
		{kcm, "cloud-provider", "external"},
		{kcm, "controllers", "nodeipam,nodelifecycle,namespace,garbagecollector,serviceaccount,serviceaccount-token"},
		{kcm, "leader-elect", "false"},
		{kcm, "allocate-node-cidrs", "true"},
		{kcm, "cluster-cidr", "10.100.0.0/14,fd00:1::/48"},
		{kcm, "service-cluster-ip-range", "10.0.0.0/24,fd00:2::/120"},
		{kcm, "node-cidr-mask-size-ipv4", "26"},
		{kcm, "node-cidr-mask-size-ipv6", "80"},
		{kcm, "node-monitor-grace-period", "7s"},
		{kcm, "node-monitor-period", "1.4s"},
		{kcm, "service-account-private-key-file", "/d/pki/sa.key"},
		{kcm, "root-ca-file", "/d/pki/ca.crt"},
	}
	for _, tt := range tests {
		if got, ok := flagValue(tt.args, tt.flag); !ok || got != tt.value {
			t.Errorf("--%s = %q (set: %v), want %q", tt.flag, got, ok, tt.value)
		}
	}
}

func TestPKI(t *testing.T) {
	dir := t.TempDir()
	ips, err := firstServiceIPs(DefaultServiceCIDRs())
	if err != nil {
		t.Fatal(err)
	}
	if want := []netip.Addr{netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("fd00:10:96::1")}; !slices.Equal(ips, want) {
		t.Errorf("first service IPs = %v, want %v", ips, want)
	}
	p, err := newPKI(dir, time.Now(), ips)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.write(); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.caCert)
	parse := func(t *testing.T, file string) *x509.Certificate {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(data)
		if block == nil {
			t.Fatalf("%s holds no PEM", file)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	tests := []struct {
		file   string
		usage  x509.ExtKeyUsage
		host   string // for serving certificates
		cn     string
		groups []string
	}{
		{file: apiServerCertFile, usage: x509.ExtKeyUsageServerAuth, host: "127.0.0.1", cn: "kube-apiserver"},
		{file: apiServerCertFile, usage: x509.ExtKeyUsageServerAuth, host: "localhost", cn: "kube-apiserver"},
		{file: apiServerCertFile, usage: x509.ExtKeyUsageServerAuth, host: "10.96.0.1", cn: "kube-apiserver"},
		{file: apiServerCertFile, usage: x509.ExtKeyUsageServerAuth, host: "kubernetes.default.svc", cn: "kube-apiserver"},
		{file: kcmServerCertFile, usage: x509.ExtKeyUsageServerAuth, host: "127.0.0.1", cn: "kube-controller-manager"},
		{file: adminCertFile, usage: x509.ExtKeyUsageClientAuth, cn: adminUser, groups: []string{"system:masters"}},
		{file: kcmClientCertFile, usage: x509.ExtKeyUsageClientAuth, cn: "system:kube-controller-manager"},
	}
	for _, tt := range tests {
		t.Run(tt.file+" "+tt.host, func(t *testing.T) {
			cert := parse(t, tt.file)
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: tt.host, KeyUsages: []x509.ExtKeyUsage{tt.usage}}); err != nil {
				t.Errorf("does not verify: %v", err)
			}
			if cert.Subject.CommonName != tt.cn || !slices.Equal(cert.Subject.Organization, tt.groups) {
				t.Errorf("subject = %q %v, want %q %v", cert.Subject.CommonName, cert.Subject.Organization, tt.cn, tt.groups)
			}
		})
	}
	t.Run("front proxy", func(t *testing.T) {
		frontProxyRoots := x509.NewCertPool()
		frontProxyRoots.AddCert(parse(t, frontProxyCACertFile))
		cert := parse(t, frontProxyCertFile)
		opts := x509.VerifyOptions{Roots: frontProxyRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		if _, err := cert.Verify(opts); err != nil || cert.Subject.CommonName != frontProxyUser {
			t.Errorf("front-proxy client %q does not verify against its CA: %v", cert.Subject.CommonName, err)
		}
		opts.Roots = roots
		if _, err := cert.Verify(opts); err == nil {
			t.Error("the front-proxy client verifies against the cluster CA, which must not vouch for it")
		}
	})
	for _, key := range []string{frontProxyCAKeyFile, frontProxyKeyFile, caKeyFile, apiServerKeyFile, adminKeyFile, kcmClientKeyFile, kcmServerKeyFile, serviceAccountKeyFile} {
		info, err := os.Stat(filepath.Join(dir, key))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", key, info.Mode().Perm())
		}
	}
}

func TestClusterCIDRsOf(t *testing.T) {
	for _, c := range []struct {
		families []string
		want     []string
	}{
		{[]string{"IPv4"}, []string{"10.244.0.0/16"}},
		{[]string{"IPv6"}, []string{"fd00:10:244::/56"}},
		{[]string{"IPv6", "IPv4"}, []string{"10.244.0.0/16", "fd00:10:244::/56"}},
		{nil, DefaultClusterCIDRs()},
	} {
		if got := ClusterCIDRsOf(c.families); !slices.Equal(got, c.want) {
			t.Errorf("ClusterCIDRsOf(%v) = %v, want %v", c.families, got, c.want)
		}
	}
}

package cloud

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ccm-conformance/ccm-conformance/providers/aws/awsctl"
)

// File names the emulator writes into its directory.
const (
	CloudConfigFile = "aws.conf"
	ControlSocket   = "aws-control.sock"
	ReadyFile       = "aws-cloud.ready"
)

// Server is a running emulator: the API on TCP, the control channel on a
// unix socket, and, where load balancers have addresses, their data path
// and the DNS server for their names.
type Server struct {
	Cloud *Cloud
	URL   string
	// DNS is the DNS server's UDP address, empty without one.
	DNS  string
	api  *http.Server
	ctl  *http.Server
	dns  net.PacketConn
	dp   *dataPlane
	errs chan error
}

// ServeOptions say where the emulator serves.
type ServeOptions struct {
	Listen string // host:port of the APIs (HTTP)
	DNS    string // host:port of the DNS server (UDP); empty: none
	Dir    string // where the cloud config, control socket and ready file go
	// Logf logs failed API calls and the data path's events; nil: quiet.
	Logf func(string, ...any)
}

// Serve starts the emulator and writes the CCM's cloud config, then the
// control socket, then the ready file into o.Dir. The data path runs when
// the cloud gives load balancers addresses (Options.LoadBalancerAddresses).
func Serve(c *Cloud, o ServeOptions) (*Server, error) {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	apiLn, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("listening for the API on %s: %w", o.Listen, err)
	}
	sock := filepath.Join(o.Dir, ControlSocket)
	_ = os.Remove(sock)
	ctlLn, err := net.Listen("unix", sock)
	if err != nil {
		apiLn.Close()
		return nil, fmt.Errorf("listening for the control channel on %s: %w", sock, err)
	}
	s := &Server{Cloud: c, URL: "http://" + apiLn.Addr().String(), errs: make(chan error, 3)}
	if o.DNS != "" {
		if s.dns, err = net.ListenPacket("udp", o.DNS); err != nil {
			apiLn.Close()
			ctlLn.Close()
			return nil, fmt.Errorf("listening for DNS on %s: %w", o.DNS, err)
		}
		s.DNS = s.dns.LocalAddr().String()
		go func() { s.errs <- serveErr("DNS server", c.st.serveDNS(s.dns)) }()
	}
	if c.st.lbAddrs.IsValid() {
		s.dp = startDataPlane(c.st, logf)
	}
	api := http.Handler(c)
	if o.Logf != nil {
		api = logRequests(c, logf)
	}
	s.api = &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	s.ctl = &http.Server{Handler: c.ControlHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { s.errs <- serveErr("API", s.api.Serve(apiLn)) }()
	go func() { s.errs <- serveErr("control channel", s.ctl.Serve(ctlLn)) }()
	dir := o.Dir
	if err := os.WriteFile(filepath.Join(dir, CloudConfigFile), []byte(c.CloudConfig(s.URL)), 0o600); err != nil {
		s.Close()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ReadyFile), []byte(s.URL+"\n"), 0o644); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func serveErr(what string, err error) error {
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serving the %s: %w", what, err)
}

// Errors delivers an error when a listener fails.
func (s *Server) Errors() <-chan error { return s.errs }

// Close stops the listeners, the data path and the DNS server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := errors.Join(s.api.Shutdown(ctx), s.ctl.Shutdown(ctx))
	if s.dp != nil {
		s.dp.Close()
	}
	if s.dns != nil {
		err = errors.Join(err, s.dns.Close())
	}
	return err
}

// logRequests logs each failed API call; calls list has them all.
func logRequests(c *Cloud, logf func(string, ...any)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		before := c.lastSeq()
		c.ServeHTTP(w, r)
		for _, call := range c.Calls(awsctl.CallsQuery{After: before}).Calls {
			if call.Error != "" {
				logf("%s %s by %s: %s", call.Action, call.Resource, call.Caller, call.Error)
			}
		}
	})
}

// CloudConfig renders the CCM's INI cloud config (k8s.io/cloud-provider-aws
// pkg/providers/v1/config, read with gcfg). [Global] names the zone, VPC,
// subnet and cluster ID, so that the CCM builds its "self" instance
// without instance metadata (newAWSCloud2: VPC, SubnetID and a cluster ID
// set); each [ServiceOverride] sends one of its clients to the emulator,
// instance metadata (ec2imds) included, so nothing asks 169.254.169.254.
func (c *Cloud) CloudConfig(url string) string {
	zone, vpc, subnet, cluster := c.CloudConfigGlobal()
	var b strings.Builder
	fmt.Fprintf(&b, "; The AWS CCM's cloud config for the EC2 and ELB emulator at %s,\n", url)
	b.WriteString("; written by aws-cloud (providers/aws). The cloud driver reads it too.\n\n")
	fmt.Fprintf(&b, "[Global]\nZone = %s\nVPC = %s\nSubnetID = %s\nKubernetesClusterID = %s\n", zone, vpc, subnet, cluster)
	if c.nlbGroupsMode != "" {
		fmt.Fprintf(&b, "NLBSecurityGroupMode = %s\n", c.nlbGroupsMode)
	}
	services := []struct{ service, signing string }{
		{"EC2", "ec2"},
		{"Elastic Load Balancing", "elasticloadbalancing"},
		{"Elastic Load Balancing v2", "elasticloadbalancing"},
		{"KMS", "kms"},
		{"ec2imds", "ec2"},
	}
	for i, s := range services {
		fmt.Fprintf(&b, "\n[ServiceOverride %q]\nService = %s\nRegion = %s\nURL = %s\nSigningRegion = %s\nSigningName = %s\n",
			fmt.Sprint(i+1), s.service, c.st.region, url, c.st.region, s.signing)
	}
	return b.String()
}

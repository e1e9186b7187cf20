package echo

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults of Options.
const (
	// DefaultTCPPort is the default of --tcp-ports.
	DefaultTCPPort = 8080
	// DefaultUDPPort is the default of --udp-ports.
	DefaultUDPPort = 8080
	// DefaultHTTPPort is the default of --http-port.
	DefaultHTTPPort = 8081
)

// The environment variables the answer's names come from; a pod sets them
// with the downward API (metadata.name, spec.nodeName).
const (
	EnvPodName  = "POD_NAME"
	EnvNodeName = "NODE_NAME"
)

// Options configure the echo server. ParseFlags fills them from the
// command line and the environment.
type Options struct {
	// TCPPorts each get a TCP listener on all addresses. Flag
	// --tcp-ports (a comma-separated list, "" for none); default
	// DefaultTCPPort.
	TCPPorts []int
	// UDPPorts each get a UDP socket on all addresses. Flag --udp-ports;
	// default DefaultUDPPort.
	UDPPorts []int
	// HTTPPort serves GET /healthz and GET /; 0 serves no HTTP. Flag
	// --http-port; default DefaultHTTPPort.
	HTTPPort int
	// Drain is how long the server keeps answering after SIGTERM, with
	// /healthz failing, before it closes its sockets. Flag --drain;
	// default 0, closing at once.
	Drain time.Duration
	// Pod is the answer's pod. Env POD_NAME; default unknown ("-").
	Pod string
	// Node is the answer's node. Env NODE_NAME; default unknown ("-").
	Node string
}

// ParseFlags reads args (without the program's name) and the
// environment (getenv) into Options and checks them. A -h or -help returns
// flag.ErrHelp after writing the usage to out; other errors are returned
// only.
func ParseFlags(args []string, getenv func(string) string, out io.Writer) (Options, error) {
	o := Options{
		TCPPorts: []int{DefaultTCPPort},
		UDPPorts: []int{DefaultUDPPort},
		HTTPPort: DefaultHTTPPort,
		Pod:      getenv(EnvPodName),
		Node:     getenv(EnvNodeName),
	}
	fs := flag.NewFlagSet("echo-server", flag.ContinueOnError)
	// Errors are returned, to be said in one line; only -h prints the
	// usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.Var((*portList)(&o.TCPPorts), "tcp-ports", "comma-separated TCP ports to answer on, all addresses (\"\" for none)")
	fs.Var((*portList)(&o.UDPPorts), "udp-ports", "comma-separated UDP ports to answer on, all addresses (\"\" for none)")
	fs.IntVar(&o.HTTPPort, "http-port", o.HTTPPort, "port of GET /healthz and GET / (0 for no HTTP)")
	fs.DurationVar(&o.Drain, "drain", 0, "how long to keep answering after SIGTERM, /healthz failing, before closing")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(out, "Usage: echo-server [flags]\n\n"+
				"Answers every TCP connection, UDP datagram and HTTP GET / with one line,\n"+
				"  echo pod=$%s node=$%s client=<source IP>\n"+
				"and serves GET /healthz for readiness probes. SIGTERM stops it (exit 0).\n\nFlags:\n", EnvPodName, EnvNodeName)
			fs.SetOutput(out)
			fs.PrintDefaults()
		}
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return o, o.Validate()
}

// Validate checks that the ports are valid and distinct per protocol, that
// HTTP does not take a TCP port, that something is served and that Drain
// is not negative.
func (o Options) Validate() error {
	var errs []error
	for _, p := range o.TCPPorts {
		if p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("--tcp-ports: %d is not a port (1-65535)", p))
		}
	}
	for _, p := range o.UDPPorts {
		if p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("--udp-ports: %d is not a port (1-65535)", p))
		}
	}
	if o.HTTPPort < 0 || o.HTTPPort > 65535 {
		errs = append(errs, fmt.Errorf("--http-port: %d is not a port (1-65535, or 0 for none)", o.HTTPPort))
	}
	if o.HTTPPort != 0 && slices.Contains(o.TCPPorts, o.HTTPPort) {
		errs = append(errs, fmt.Errorf("--http-port %d is also in --tcp-ports", o.HTTPPort))
	}
	if len(o.TCPPorts) == 0 && len(o.UDPPorts) == 0 && o.HTTPPort == 0 {
		errs = append(errs, errors.New("nothing to serve: no --tcp-ports, no --udp-ports and --http-port=0"))
	}
	if o.Drain < 0 {
		errs = append(errs, fmt.Errorf("--drain: %s is negative", o.Drain))
	}
	return errors.Join(errs...)
}

// Addresses are the addresses Options listen on: ":PORT" each, which is
// every IPv4 and IPv6 address of the host (one dual-stack socket where the
// host has IPv6, IPv4 alone where it has not).
func (o Options) Addresses() Addresses {
	var a Addresses
	for _, p := range o.TCPPorts {
		a.TCP = append(a.TCP, net.JoinHostPort("", strconv.Itoa(p)))
	}
	for _, p := range o.UDPPorts {
		a.UDP = append(a.UDP, net.JoinHostPort("", strconv.Itoa(p)))
	}
	if o.HTTPPort != 0 {
		a.HTTP = net.JoinHostPort("", strconv.Itoa(o.HTTPPort))
	}
	return a
}

// portList is a flag.Value of comma-separated ports.
type portList []int

func (l *portList) String() string {
	if l == nil {
		return ""
	}
	s := make([]string, len(*l))
	for i, p := range *l {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

func (l *portList) Set(v string) error {
	var ports []int
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("%q is not a port number", f)
		}
		if slices.Contains(ports, p) {
			return fmt.Errorf("port %d given twice", p)
		}
		ports = append(ports, p)
	}
	*l = ports
	return nil
}

package profile

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ccm-conformance/ccm-conformance/framework/internal/freeport"
)

// The variables a profile may use in paths, commands, args and env values,
// written ${NAME}.
const (
	// VarProfileDir is the directory of the profile file.
	VarProfileDir = "PROFILE_DIR"
	// VarRunDir is a private directory for this run, removed afterwards.
	VarRunDir = "RUN_DIR"
	// VarKubeconfig is the admin kubeconfig of the cluster under test.
	VarKubeconfig = "KUBECONFIG"
	// VarInstance is the number of the CCM instance being started: 0 for
	// the CCM under test (and for the services and the cloud driver, which
	// run once), 1, 2, ... for the extra instances specs start (leader
	// migration).
	VarInstance = "INSTANCE"
	// VarFreePort is a TCP port free on loopback when it is first
	// expanded; VarFreePort+"_"+NAME is another one per NAME. Within one
	// instance the same name gives the same port (see Expander).
	VarFreePort = "FREE_PORT"
	// VarClusterName is the cluster's name as its backend knows it (a
	// kind cluster's name); a backend without one cannot expand it.
	VarClusterName = "CLUSTER_NAME"
	// VarHostIP is an address of the harness's machine that the cluster's
	// nodes reach (the gateway of a kind cluster's Docker network; the
	// loopback address on the local backend, whose nodes are simulated
	// by the harness itself).
	VarHostIP = "HOST_IP"
)

// EnvPrefix starts the variables that read the harness's environment:
// ${env:NAME} is the value of NAME where the harness runs (a CI secret: a
// cloud's credentials). Such a value is a secret: the run directory, the
// build log and the program's output never show it (EnvSecrets, and the
// run directory's redaction).
const EnvPrefix = "env:"

var (
	variableRef = regexp.MustCompile(`\$\{([^}]*)\}`)
	// envName is the NAME of ${env:NAME}: an environment variable's name.
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// freePortName is the NAME of ${FREE_PORT_NAME}.
	freePortName = regexp.MustCompile(`^[A-Z0-9_]+$`)
)

var fixedVariables = map[string]bool{VarProfileDir: true, VarRunDir: true, VarKubeconfig: true, VarInstance: true, VarFreePort: true,
	VarClusterName: true, VarHostIP: true}

// portVariable reports whether name is ${FREE_PORT} or ${FREE_PORT_NAME}.
func portVariable(name string) bool {
	if name == VarFreePort {
		return true
	}
	rest, ok := strings.CutPrefix(name, VarFreePort+"_")
	return ok && freePortName.MatchString(rest)
}

func knownVariable(name string) bool {
	return fixedVariables[name] || portVariable(name) || envVariable(name)
}

// envVariable reports whether name is env:NAME.
func envVariable(name string) bool {
	rest, ok := strings.CutPrefix(name, EnvPrefix)
	return ok && envName.MatchString(rest)
}

func validateVariables(path *field.Path, values []string) field.ErrorList {
	var errs field.ErrorList
	for i, v := range values {
		p := path
		if len(values) > 1 {
			p = path.Index(i)
		}
		for _, m := range variableRef.FindAllStringSubmatch(v, -1) {
			if !knownVariable(m[1]) {
				names := make([]string, 0, len(fixedVariables)+1)
				for n := range fixedVariables {
					names = append(names, "${"+n+"}")
				}
				names = append(names, "${"+VarFreePort+"_<NAME>}", "${"+EnvPrefix+"<NAME>}")
				sort.Strings(names)
				errs = append(errs, field.Invalid(p, v, fmt.Sprintf("unknown variable ${%s}; known: %v", m[1], names)))
			}
		}
	}
	return errs
}

// PortAllocator returns a TCP port that is free on loopback.
type PortAllocator func() (int, error)

// FreeLoopbackPort returns a TCP port free on 127.0.0.1, from below the
// kernel's ephemeral range (framework/internal/freeport).
func FreeLoopbackPort() (int, error) { return freeport.Port() }

// ExpanderInput is what the variables of one run stand for.
type ExpanderInput struct {
	// RunDir is ${RUN_DIR}.
	RunDir string
	// Kubeconfig is ${KUBECONFIG}.
	Kubeconfig string
	// FreePort picks the ports of ${FREE_PORT} and ${FREE_PORT_NAME}.
	// Default FreeLoopbackPort.
	FreePort PortAllocator
	// ClusterName is ${CLUSTER_NAME}; "" where the backend has none.
	ClusterName string
	// HostIP is ${HOST_IP}; default 127.0.0.1.
	HostIP string
	// Backend names the backend in the error for a variable it cannot
	// expand.
	Backend string
}

// maxPortTries bounds how often a port is asked for until one comes that
// no other name of the run holds.
const maxPortTries = 20

// portPool hands out the ports of one run: no port twice.
type portPool struct {
	mu    sync.Mutex
	alloc PortAllocator
	taken map[int]bool
}

func (p *portPool) next() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range maxPortTries {
		port, err := p.alloc()
		if err != nil {
			return 0, err
		}
		if !p.taken[port] {
			p.taken[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("finding a free port: %d tries gave only ports this run already uses", maxPortTries)
}

// portScope holds the ports one instance's names stand for.
type portScope struct {
	mu     sync.Mutex
	byName map[string]int
}

func (s *portScope) lookup(name string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	port, ok := s.byName[name]
	return port, ok
}

// Expander substitutes profile variables for one instance of the run.
//
// The expander NewExpander returns is the run's own: the services and the
// cloud driver use it, and ${INSTANCE} is 0 there. ForInstance derives the
// expander of a CCM instance. A port variable names the same port within
// one expander; an instance sees the ports the run's own expander gave out
// (so every CCM instance reaches the same service) and picks new ones for
// every other name (so two CCM instances never listen on the same port).
type Expander struct {
	vars     map[string]string
	backend  string
	pool     *portPool
	ports    *portScope
	shared   *portScope // the run's own ports; nil in the run's own expander
	instance int
}

// NewExpander returns the run's expander (instance 0).
func (p *Profile) NewExpander(in ExpanderInput) *Expander {
	alloc := in.FreePort
	if alloc == nil {
		alloc = FreeLoopbackPort
	}
	if in.HostIP == "" {
		in.HostIP = "127.0.0.1"
	}
	vars := map[string]string{
		VarProfileDir: p.Dir, VarRunDir: in.RunDir, VarKubeconfig: in.Kubeconfig, VarInstance: "0", VarHostIP: in.HostIP,
	}
	if in.ClusterName != "" {
		vars[VarClusterName] = in.ClusterName
	}
	return &Expander{
		vars:    vars,
		backend: in.Backend,
		pool:    &portPool{alloc: alloc, taken: map[int]bool{}},
		ports:   &portScope{byName: map[string]int{}},
	}
}

// ForInstance returns the expander of CCM instance n (0 for the CCM under
// test): ${INSTANCE} is n, and port names the run's own expander has not
// used get ports of the instance's own.
func (e *Expander) ForInstance(n int) *Expander {
	vars := make(map[string]string, len(e.vars))
	for k, v := range e.vars {
		vars[k] = v
	}
	vars[VarInstance] = strconv.Itoa(n)
	shared := e.shared
	if shared == nil {
		shared = e.ports
	}
	return &Expander{vars: vars, backend: e.backend, pool: e.pool, ports: &portScope{byName: map[string]int{}}, shared: shared, instance: n}
}

// Instance is the value of ${INSTANCE}.
func (e *Expander) Instance() int { return e.instance }

// port returns the port of a port variable, picking one on first use.
func (e *Expander) port(name string) (int, error) {
	if e.shared != nil {
		if port, ok := e.shared.lookup(name); ok {
			return port, nil
		}
	}
	e.ports.mu.Lock()
	defer e.ports.mu.Unlock()
	if port, ok := e.ports.byName[name]; ok {
		return port, nil
	}
	port, err := e.pool.next()
	if err != nil {
		return 0, fmt.Errorf("${%s}: %w", name, err)
	}
	e.ports.byName[name] = port
	return port, nil
}

// Expand substitutes every ${NAME} in s. Validation has already rejected
// unknown names; the error is a port that could not be found, or a
// variable the run's backend has no value for.
func (e *Expander) Expand(s string) (string, error) {
	var firstErr error
	out := variableRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := variableRef.FindStringSubmatch(ref)[1]
		if envVariable(name) {
			v, ok := os.LookupEnv(strings.TrimPrefix(name, EnvPrefix))
			if !ok && firstErr == nil {
				firstErr = fmt.Errorf("${%s}: %s is not set in the harness's environment", name, strings.TrimPrefix(name, EnvPrefix))
			}
			return v
		}
		if !portVariable(name) {
			v, ok := e.vars[name]
			if !ok && firstErr == nil {
				firstErr = fmt.Errorf("${%s}: the %s backend has no value for it", name, cmp.Or(e.backend, "run's"))
			}
			return v
		}
		port, err := e.port(name)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return ""
		}
		return strconv.Itoa(port)
	})
	return out, firstErr
}

// ExpandAll substitutes variables in every element.
func (e *Expander) ExpandAll(in []string) ([]string, error) {
	out := make([]string, len(in))
	for i, s := range in {
		var err error
		if out[i], err = e.Expand(s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ExpandMap returns env with each value expanded; an error names the key
// (the first, in sorted order, whose value does not expand).
func (e *Expander) ExpandMap(env map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		x, err := e.Expand(env[k])
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
		out[k] = x
	}
	return out, nil
}

// Environ returns the harness's environment with env added, expanded.
func (e *Expander) Environ(env map[string]string) ([]string, error) {
	own, err := e.Env(env)
	if err != nil {
		return nil, err
	}
	return append(os.Environ(), own...), nil
}

// Env returns env expanded, as KEY=VALUE sorted by key, without the
// harness's environment (a container's whole environment).
func (e *Expander) Env(env map[string]string) ([]string, error) {
	expanded, err := e.ExpandMap(env)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(expanded)) {
		out = append(out, k+"="+expanded[k])
	}
	return out, nil
}

// EnvNames returns the sorted, distinct variable names of an environment
// in the KEY=VALUE form, without the values.
func EnvNames(environ []string) []string {
	seen := map[string]bool{}
	var names []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if name != "" && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// EnvSecrets returns the value of every ${env:NAME} the profile uses, by
// NAME, read from the harness's environment: what the run must never
// show. A NAME that is not set is an error naming it.
func (p *Profile) EnvSecrets() (map[string]string, error) {
	out := map[string]string{}
	for _, name := range p.envNames {
		v, ok := os.LookupEnv(name)
		if !ok {
			return nil, fmt.Errorf("profile %s: ${%s%s}: %s is not set in the harness's environment", p.Path, EnvPrefix, name, name)
		}
		out[name] = v
	}
	return out, nil
}

// envNamesIn lists the distinct NAMEs of ${env:NAME} in a document.
func envNamesIn(data []byte) []string {
	var names []string
	for _, m := range variableRef.FindAllStringSubmatch(string(data), -1) {
		if envVariable(m[1]) {
			n := strings.TrimPrefix(m[1], EnvPrefix)
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

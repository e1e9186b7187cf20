package driversdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// AllVerbs are the verbs of protocol v1, in the order of the protocol's
// table.
var AllVerbs = []Verb{
	VerbInfo,
	VerbInstancesList, VerbInstanceGet, VerbInstanceCreate, VerbInstanceDelete,
	VerbInstanceStop, VerbInstanceStart, VerbInstanceSetAddresses,
	VerbLoadBalancerGet, VerbLoadBalancersList,
	VerbRoutesList, VerbRouteCreate, VerbRouteDelete,
	VerbFaultInject, VerbFaultClear,
	VerbCallsList,
}

// Exit codes of a driver process.
const (
	ExitOK       = 0
	ExitFailure  = 1
	ExitNotFound = 3 // the object the request names does not exist
)

// ErrNotFound marks an error for which the driver exits with ExitNotFound:
// wrap it (fmt.Errorf("instance %s: %w", name, driversdk.ErrNotFound)).
var ErrNotFound = errors.New("not found")

// HandlerFunc answers one verb: request is the JSON the harness wrote on
// stdin ({} when it wrote nothing); the result is written as JSON.
type HandlerFunc func(ctx context.Context, request []byte) (any, error)

// Driver is a driver's verbs: Main dispatches to them and answers info
// from them.
type Driver struct {
	// Provider is info's provider name.
	Provider string
	// Name leads the driver's error lines; default Provider-cloud-driver.
	Name string
	// Verbs are the verbs the driver implements (info aside), in the
	// order info lists them. A verb left out is not offered; the specs
	// that need it skip.
	Verbs []Verb
	// Handle answers each of Verbs.
	Handle map[Verb]HandlerFunc
	// Setup, when set, runs before every verb but info (which needs no
	// cloud): to read configuration, open a client. An error is the
	// verb's.
	Setup func(ctx context.Context) error
}

// Info is the driver's handshake answer.
func (d *Driver) Info() Info {
	verbs := append([]Verb{VerbInfo}, d.Verbs...)
	return Info{ProtocolVersion: ProtocolVersion, Provider: d.Provider, Verbs: verbs}
}

// Main runs one call the way the harness makes it: args are the verb's
// words (os.Args[1:]), stdin the request. The response goes to stdout as
// one JSON document; an error goes to stderr as one line naming the
// driver and the verb. It returns the exit code: ExitOK, ExitNotFound for
// an error wrapping ErrNotFound, ExitFailure otherwise.
func (d *Driver) Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	verb := Verb(strings.Join(args, " "))
	resp, err := d.serve(ctx, verb, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "%s %s: %v\n", d.name(), verb, err)
		if errors.Is(err, ErrNotFound) {
			return ExitNotFound
		}
		return ExitFailure
	}
	if err := json.NewEncoder(stdout).Encode(resp); err != nil {
		fmt.Fprintf(stderr, "%s %s: writing the response: %v\n", d.name(), verb, err)
		return ExitFailure
	}
	return ExitOK
}

func (d *Driver) serve(ctx context.Context, verb Verb, stdin io.Reader) (any, error) {
	if verb == VerbInfo {
		return d.Info(), nil
	}
	h, ok := d.Handle[verb]
	if !ok || !d.offers(verb) {
		return nil, fmt.Errorf("unknown verb %q (this driver offers: %s)", verb, strings.Join(verbStrings(d.Info().Verbs), ", "))
	}
	request, err := io.ReadAll(stdin)
	if err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	if len(bytes.TrimSpace(request)) == 0 {
		request = []byte("{}")
	}
	if d.Setup != nil {
		if err := d.Setup(ctx); err != nil {
			return nil, err
		}
	}
	return h(ctx, request)
}

func (d *Driver) offers(v Verb) bool {
	for _, o := range d.Verbs {
		if o == v {
			return true
		}
	}
	return false
}

// Decode reads a request into a T. Fields the protocol does not name are
// ignored, as the protocol asks of both sides.
func Decode[T any](request []byte) (T, error) {
	var v T
	if err := json.Unmarshal(request, &v); err != nil {
		return v, fmt.Errorf("decoding the request: %w", err)
	}
	return v, nil
}

func verbStrings(vs []Verb) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// name is the program's name in error lines.
func (d *Driver) name() string {
	if d.Name != "" {
		return d.Name
	}
	return d.Provider + "-cloud-driver"
}

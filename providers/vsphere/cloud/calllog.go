package cloud

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/ccm-conformance/ccm-conformance/providers/vsphere/simctl"
)

// callLog records every SOAP call the SDK serves: which method, who
// called, which VM it was about and the fault it was answered with.
//
// Who called: a client logs in once (SessionManager.Login) and sends the
// session's cookie with every later call, so the user, the User-Agent and a
// digest of the cookie tell two processes apart even when they log in as
// the same user with the same User-Agent, as two vSphere CCMs do (the CCM's
// vclib/connection.go keeps one session per vCenter and re-logs in only
// when it is no longer valid, which the simulator's sessions never become).
// A call made before the login (RetrieveServiceContent) is told apart by
// the TCP peer.
type callLog struct {
	now      func() time.Time
	logCalls bool
	logf     func(format string, args ...any)
	names    *vmNames

	mu       sync.Mutex
	calls    []simctl.Call
	sessions map[string]string // session cookie -> user
}

func newCallLog(inproc *vim25.Client, now func() time.Time, logCalls bool, logf func(string, ...any)) *callLog {
	return &callLog{now: now, logCalls: logCalls, logf: logf, names: newVMNames(inproc), sessions: map[string]string{}}
}

// since returns the calls after seq and the newest sequence number.
func (l *callLog) since(after int64) simctl.Calls {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := simctl.Calls{Calls: []simctl.Call{}, Last: after}
	// Sequence numbers are 1, 2, ...: the call with seq n is calls[n-1].
	if after < 0 {
		after = 0
	}
	if after < int64(len(l.calls)) {
		out.Calls = append(out.Calls, l.calls[after:]...)
	}
	if n := int64(len(l.calls)); n > out.Last {
		out.Last = n
	}
	return out
}

// recorder holds a response back until the call is logged, so that a
// client that has its answer finds the call in the log.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// flush sends the held response.
func (r *recorder) flush(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body.Bytes())
}

// wrap logs the SOAP calls (POST /sdk...) that next serves; everything
// else (the vAPI REST endpoints) passes through unlogged.
func (l *callLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/sdk") {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &recorder{header: http.Header{}}
		next.ServeHTTP(rec, r)
		l.record(r, body, rec)
		rec.flush(w)
	})
}

func (l *callLog) record(r *http.Request, body []byte, rec *recorder) {
	method, err := simulator.UnmarshalBody(typeFunc, body)
	name := ""
	if err == nil {
		name = method.Name
	} else {
		name = firstBodyElement(body)
	}
	call := simctl.Call{Method: name, UserAgent: r.UserAgent()}
	if rec.status != http.StatusOK && rec.status != 0 {
		call.Error = faultString(rec.body.Bytes())
		if call.Error == "" {
			call.Error = http.StatusText(rec.status)
		}
	}

	// The session: the cookie the client sent, or the one a login set.
	cookie := ""
	if c, err := r.Cookie(soap.SessionCookieName); err == nil {
		cookie = c.Value
	}
	for _, c := range (&http.Response{Header: rec.header}).Cookies() {
		if c.Name == soap.SessionCookieName && call.Error == "" {
			cookie = c.Value
			if method != nil {
				if login, ok := method.Body.(*types.Login); ok {
					l.mu.Lock()
					l.sessions[cookie] = login.UserName
					l.mu.Unlock()
				}
			}
		}
	}

	if err == nil {
		call.Resource = l.names.resource(context.Background(), method)
		if strings.HasSuffix(name, "_Task") {
			l.names.invalidate() // VMs may have come, gone or changed
		}
	}

	l.mu.Lock()
	switch user, known := l.sessions[cookie]; {
	case cookie == "":
		call.Caller = call.UserAgent + " from " + r.RemoteAddr
	case known:
		call.Caller = call.UserAgent + " " + user + " session " + digest(cookie)
	default:
		call.Caller = call.UserAgent + " session " + digest(cookie)
	}
	call.Seq = int64(len(l.calls)) + 1
	call.Time = l.now().UTC()
	l.calls = append(l.calls, call)
	l.mu.Unlock()

	if l.logCalls && call.UserAgent != simctl.DriverUserAgent && (call.Error != "" || !quietMethods[call.Method]) {
		l.logf("call %d %s caller=%q resource=%q error=%q", call.Seq, call.Method, call.Caller, call.Resource, call.Error)
	}
}

// quietMethods are the property collector's reads, which make up most of
// a CCM's calls (a few per node and second): they are logged but printed
// only when they fail.
var quietMethods = map[string]bool{
	"RetrieveProperties": true, "RetrievePropertiesEx": true, "ContinueRetrievePropertiesEx": true,
	"WaitForUpdatesEx": true, "CreateFilter": true, "DestroyPropertyFilter": true,
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// typeFunc resolves vim25 type names, also with a namespace prefix
// ("ns1:TraversalSpec"), as the simulator's own decoder does.
func typeFunc(name string) (reflect.Type, bool) {
	t, ok := vimTypes(name)
	if !ok {
		if _, local, found := strings.Cut(name, ":"); found {
			t, ok = vimTypes(local)
		}
	}
	return t, ok
}

var vimTypes = types.TypeFunc()

// firstBodyElement names the first element inside the SOAP Body: the
// method, when the request does not decode.
func firstBodyElement(body []byte) string {
	d := xml.NewDecoder(bytes.NewReader(body))
	inBody := false
	for {
		tok, err := d.Token()
		if err != nil {
			return "unknown"
		}
		if se, ok := tok.(xml.StartElement); ok {
			if inBody {
				return se.Name.Local
			}
			inBody = se.Name.Local == "Body"
		}
	}
}

// faultString extracts a SOAP fault's faultstring.
func faultString(body []byte) string {
	d := xml.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "faultstring" {
			var s string
			if d.DecodeElement(&s, &se) != nil {
				return ""
			}
			if s == "" {
				s = "fault"
			}
			return s
		}
	}
}

// vmNames resolves what a call names (a VM's reference, BIOS or instance
// UUID, guest DNS name or IP) to the VM's name. It reads the inventory
// in-process and keeps what it learned, so that lookups of a VM that has
// since been destroyed still name it.
type vmNames struct {
	client *vim25.Client

	mu     sync.Mutex
	fresh  bool
	byRef  map[string]string
	byUUID map[string]string
	byDNS  map[string]string
	byIP   map[string]string
}

func newVMNames(c *vim25.Client) *vmNames {
	return &vmNames{client: c, byRef: map[string]string{}, byUUID: map[string]string{}, byDNS: map[string]string{}, byIP: map[string]string{}}
}

func (n *vmNames) invalidate() {
	n.mu.Lock()
	n.fresh = false
	n.mu.Unlock()
}

// resource names the VM a call is about, or "".
func (n *vmNames) resource(ctx context.Context, m *simulator.Method) string {
	var table func(*vmNames) map[string]string
	key := ""
	fallback := ""
	switch b := m.Body.(type) {
	case *types.FindByUuid:
		table, key = uuidTable, strings.ToLower(b.Uuid)
	case *types.FindAllByUuid:
		table, key = uuidTable, strings.ToLower(b.Uuid)
	case *types.FindByDnsName:
		table, key, fallback = dnsTable, strings.ToLower(b.DnsName), b.DnsName
	case *types.FindAllByDnsName:
		table, key, fallback = dnsTable, strings.ToLower(b.DnsName), b.DnsName
	case *types.FindByIp:
		table, key, fallback = ipTable, b.Ip, notAnIP(b.Ip)
	case *types.FindAllByIp:
		table, key, fallback = ipTable, b.Ip, notAnIP(b.Ip)
	case *types.RetrievePropertiesEx:
		table, key = refTable, onlyVM(b.SpecSet)
	case *types.RetrieveProperties:
		table, key = refTable, onlyVM(b.SpecSet)
	default:
		if m.This.Type == "VirtualMachine" {
			table, key = refTable, m.This.Value
		}
	}
	if table == nil || key == "" {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if name, ok := table(n)[key]; ok && n.fresh {
		return name
	}
	n.refresh(ctx)
	if name, ok := table(n)[key]; ok {
		return name
	}
	return fallback
}

// notAnIP is what an IP lookup of a string that is no IP is about: the CCM
// looks a node up "by IP" with its name when no VM has the name as its DNS
// name (nodemanager.go, shakeOutNodeIDLookup).
func notAnIP(s string) string {
	if net.ParseIP(s) != nil {
		return ""
	}
	return s
}

func refTable(n *vmNames) map[string]string  { return n.byRef }
func uuidTable(n *vmNames) map[string]string { return n.byUUID }
func dnsTable(n *vmNames) map[string]string  { return n.byDNS }
func ipTable(n *vmNames) map[string]string   { return n.byIP }

// onlyVM returns the reference of the one VM a property retrieval reads,
// or "" when it reads anything else too.
func onlyVM(specs []types.PropertyFilterSpec) string {
	vm := ""
	for _, s := range specs {
		for _, o := range s.ObjectSet {
			if o.Obj.Type != "VirtualMachine" || (vm != "" && vm != o.Obj.Value) || len(o.SelectSet) > 0 {
				return ""
			}
			vm = o.Obj.Value
		}
	}
	return vm
}

// refresh reads every VM; the caller holds n.mu.
func (n *vmNames) refresh(ctx context.Context) {
	var vms []mo.VirtualMachine
	if err := retrieveAll(ctx, n.client, n.client.ServiceContent.RootFolder, "VirtualMachine",
		[]string{"name", "config.uuid", "config.instanceUuid", "guest.hostName", "guest.net"}, &vms); err != nil {
		return
	}
	for _, vm := range vms {
		n.byRef[vm.Self.Value] = vm.Name
		if vm.Config != nil {
			n.byUUID[strings.ToLower(vm.Config.Uuid)] = vm.Name
			n.byUUID[strings.ToLower(vm.Config.InstanceUuid)] = vm.Name
		}
		if vm.Guest != nil {
			if vm.Guest.HostName != "" {
				n.byDNS[strings.ToLower(vm.Guest.HostName)] = vm.Name
			}
			for _, nic := range vm.Guest.Net {
				for _, ip := range nic.IpAddress {
					n.byIP[ip] = vm.Name
				}
			}
		}
	}
	n.fresh = true
}

package cloud

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/ccm-conformance/ccm-conformance/providers/vsphere/simctl"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{name: "defaults", opts: Options{Dir: "/run"}},
		{name: "dual-stack", opts: Options{Dir: "/run", IPFamily: "ipv6,ipv4"}},
		{name: "no directory", opts: Options{}, wantErr: "directory"},
		{name: "a family with a space", opts: Options{Dir: "/run", IPFamily: "ipv4, ipv6"}, wantErr: "ip family"},
		{name: "upper case", opts: Options{Dir: "/run", IPFamily: "IPv4"}, wantErr: "ip family"},
		{name: "a zone twice", opts: Options{Dir: "/run", Zones: []string{"a", "a"}}, wantErr: "distinct"},
		{name: "one network twice", opts: Options{Dir: "/run", InternalNetwork: "n", ExternalNetwork: "n"}, wantErr: "both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.setDefaults()
			err := tc.opts.validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("validate: %v, want an error mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestCloudConfig(t *testing.T) {
	o := Options{Dir: "/run"}
	o.setDefaults()
	got := cloudConfig(&o, "127.0.0.1", "8989", "/run/vsphere-ca.pem", "DC0")
	for _, want := range []string{
		"[Global]\nuser = \"ccm@vsphere.local\"\npassword = \"ccm-conformance\"\nport = \"8989\"\ninsecure-flag = false\nca-file = \"/run/vsphere-ca.pem\"\nip-family = \"ipv4\"\n",
		"[VirtualCenter \"127.0.0.1\"]\ndatacenters = \"DC0\"\n",
		"[Labels]\nregion = \"k8s-region\"\nzone = \"k8s-zone\"\n",
		"[Nodes]\ninternal-vm-network-name = \"VM Network\"\nexternal-vm-network-name = \"External Network\"\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the cloud config has no\n%s\nin\n%s", want, got)
		}
	}
}

func TestSOAPParsing(t *testing.T) {
	fault := `<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>injected fault</faultstring><detail></detail></soapenv:Fault></soapenv:Body></soapenv:Envelope>`
	if got := faultString([]byte(fault)); got != "injected fault" {
		t.Errorf("faultString = %q", got)
	}
	if got := faultString([]byte("<html>")); got != "" {
		t.Errorf("faultString of no fault = %q", got)
	}
	req := `<Envelope xmlns="http://schemas.xmlsoap.org/soap/envelope/"><Header/><Body><FindByUuid xmlns="urn:vim25"><_this type="SearchIndex">SearchIndex</_this></FindByUuid></Body></Envelope>`
	if got := firstBodyElement([]byte(req)); got != "FindByUuid" {
		t.Errorf("firstBodyElement = %q", got)
	}
	vm := func(id string) types.ObjectSpec {
		return types.ObjectSpec{Obj: types.ManagedObjectReference{Type: "VirtualMachine", Value: id}}
	}
	for _, tc := range []struct {
		specs []types.PropertyFilterSpec
		want  string
	}{
		{[]types.PropertyFilterSpec{{ObjectSet: []types.ObjectSpec{vm("vm-1")}}}, "vm-1"},
		{[]types.PropertyFilterSpec{{ObjectSet: []types.ObjectSpec{vm("vm-1")}}, {ObjectSet: []types.ObjectSpec{vm("vm-1")}}}, "vm-1"},
		{[]types.PropertyFilterSpec{{ObjectSet: []types.ObjectSpec{vm("vm-1"), vm("vm-2")}}}, ""},
		{[]types.PropertyFilterSpec{{ObjectSet: []types.ObjectSpec{{Obj: types.ManagedObjectReference{Type: "HostSystem", Value: "host-1"}}}}}, ""},
	} {
		if got := onlyVM(tc.specs); got != tc.want {
			t.Errorf("onlyVM(%+v) = %q, want %q", tc.specs, got, tc.want)
		}
	}
}

func TestIntegrationCloud(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a simulated vCenter")
	}
	dir := t.TempDir()
	var logged []string
	c, err := Start(t.Context(), Options{Dir: dir, LogCalls: true, Logf: func(f string, args ...any) { logged = append(logged, f) }})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = c.Close()
		}
	})
	for _, f := range []string{ConfigFile, CAFile, ControlSocket, ReadyFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if ready, _ := os.ReadFile(filepath.Join(dir, ReadyFile)); strings.TrimSpace(string(ready)) != c.URL().String() {
		t.Errorf("the ready file holds %q, want %s", ready, c.URL())
	}
	if conf, _ := os.ReadFile(filepath.Join(dir, ConfigFile)); !strings.Contains(string(conf), `port = "`+c.URL().Port()+`"`) {
		t.Errorf("the cloud config names another port than %s:\n%s", c.URL().Port(), conf)
	}

	// The CA file is what the SDK serves with; log in as a CCM would.
	sc := soap.NewClient(c.URL(), false)
	if err := sc.SetRootCAs(filepath.Join(dir, CAFile)); err != nil {
		t.Fatal(err)
	}
	vc, err := vim25.NewClient(t.Context(), sc)
	if err != nil {
		t.Fatalf("connecting with the CA file: %v", err)
	}
	vc.UserAgent = "test-ccm"
	sm := session.NewManager(vc)
	if err := sm.Login(t.Context(), url.UserPassword("someone", "anything")); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sm.Logout(context.Background()) }()

	// The inventory: clusters per zone in a datacenter of the region, no VMs.
	finder := find.NewFinder(vc)
	dc, err := finder.DefaultDatacenter(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	finder.SetDatacenter(dc)
	clusters, err := finder.ClusterComputeResourceList(t.Context(), "*")
	if err != nil || len(clusters) != 3 {
		t.Fatalf("clusters: %v, %v", clusters, err)
	}
	if vms, err := finder.VirtualMachineList(t.Context(), "*"); err == nil || len(vms) != 0 {
		t.Errorf("VMs: %v, %v; want none", vms, err)
	}
	if _, err := finder.Network(t.Context(), "External Network"); err != nil {
		t.Errorf("the external network: %v", err)
	}
	rc := rest.NewClient(vc)
	if err := rc.Login(t.Context(), url.UserPassword("someone", "anything")); err != nil {
		t.Fatal(err)
	}
	tm := tags.NewManager(rc)
	tagNames := func(ref types.ManagedObjectReference) []string {
		t.Helper()
		ts, err := tm.GetAttachedTags(t.Context(), ref)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tag := range ts {
			cat, err := tm.GetCategory(t.Context(), tag.CategoryID)
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, cat.Name+"="+tag.Name)
		}
		return names
	}
	if got := tagNames(dc.Reference()); !slices.Equal(got, []string{"k8s-region=region-1"}) {
		t.Errorf("the datacenter's tags: %v", got)
	}
	var zones []string
	for _, cl := range clusters {
		zones = append(zones, tagNames(cl.Reference())...)
	}
	if want := []string{"k8s-zone=zone-a", "k8s-zone=zone-b", "k8s-zone=zone-c"}; !slices.Equal(zones, want) {
		t.Errorf("the clusters' tags: %v, want %v", zones, want)
	}

	// The call log tells the session's calls by user and session, and the
	// call before the login by the peer.
	calls := c.calls.since(0)
	if len(calls.Calls) < 3 || calls.Last != int64(len(calls.Calls)) {
		t.Fatalf("calls: %+v", calls)
	}
	first, login := calls.Calls[0], calls.Calls[1]
	if first.Method != "RetrieveServiceContent" || !strings.Contains(first.Caller, " from 127.0.0.1:") {
		t.Errorf("the first call: %+v", first)
	}
	if login.Method != "Login" || !strings.HasPrefix(login.Caller, "test-ccm someone session ") {
		t.Errorf("the login: %+v", login)
	}
	if later := calls.Calls[2]; later.Caller != login.Caller {
		t.Errorf("a call after the login: caller %q, want the login's %q", later.Caller, login.Caller)
	}
	if len(logged) == 0 {
		t.Error("nothing logged")
	}
	if got := c.calls.since(calls.Last + 5); len(got.Calls) != 0 || got.Last != calls.Last+5 {
		t.Errorf("calls after a future seq: %+v", got)
	}

	// The control channel's errors.
	ctl := simctl.NewClient(filepath.Join(dir, ControlSocket))
	if err := ctl.SetGuest(t.Context(), "nothing", simctl.Guest{}); !errors.Is(err, simctl.ErrNotFound) {
		t.Errorf("SetGuest of no VM: %v, want not found", err)
	}
	if err := ctl.SetFault(t.Context(), "routes", simctl.Fault{ErrorRate: 1}); err == nil || !strings.Contains(err.Error(), "unknown fault target") {
		t.Errorf("SetFault routes: %v", err)
	}
	if err := ctl.SetFault(t.Context(), simctl.TargetInstances, simctl.Fault{ErrorRate: 0.5}); err != nil {
		t.Error(err)
	}
	if n := len(c.model.Service.GetFaultRules()); n != len(faultMethods[simctl.TargetInstances]) {
		t.Errorf("%d fault rules, want one per SearchIndex method", n)
	}
	if err := ctl.ClearFaults(t.Context()); err != nil || len(c.model.Service.GetFaultRules()) != 0 {
		t.Errorf("ClearFaults: %v, %d rules left", err, len(c.model.Service.GetFaultRules()))
	}

	// A VM with one NIC: guest information by network.
	pool, err := clusters[0].ResourcePool(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	folders, err := dc.Folders(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	net, err := finder.Network(t.Context(), "VM Network")
	if err != nil {
		t.Fatal(err)
	}
	backing, err := net.EthernetCardBackingInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var devices object.VirtualDeviceList
	card, err := devices.CreateEthernetCard("vmxnet3", backing)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := append(devices, card).ConfigSpec(types.VirtualDeviceConfigSpecOperationAdd)
	if err != nil {
		t.Fatal(err)
	}
	task, err := folders.VmFolder.CreateVM(t.Context(), types.VirtualMachineConfigSpec{
		Name: "vm1", GuestId: "otherLinux64Guest", Files: &types.VirtualMachineFileInfo{VmPathName: "[LocalDS_0]"}, DeviceChange: changes,
	}, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		guest   simctl.Guest
		wantErr string
	}{
		{simctl.Guest{HostName: "vm1", Networks: map[string][]string{"External Network": {"203.0.113.1"}}}, "no NIC on network"},
		{simctl.Guest{HostName: "vm1", Networks: map[string][]string{"VM Network": {"10.0.0.300"}}}, "10.0.0.300"},
		{simctl.Guest{HostName: "vm1", Networks: map[string][]string{"VM Network": {"10.0.0.3", "fd00::3"}}}, ""},
	} {
		err := ctl.SetGuest(t.Context(), "vm1", tc.guest)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("SetGuest %+v: %v, want an error mentioning %q", tc.guest, err, tc.wantErr)
		}
	}
	vms, err := finder.VirtualMachineList(t.Context(), "vm1")
	if err != nil {
		t.Fatal(err)
	}
	ip, err := vms[0].WaitForIP(t.Context())
	if err != nil || ip != "10.0.0.3" {
		t.Errorf("the VM's guest.ipAddress: %q, %v", ip, err)
	}

	// The call log names the VM a lookup was about, and a name no VM has
	// as it was asked for.
	mark := c.calls.since(0).Last
	si := object.NewSearchIndex(vc)
	lookups := []struct {
		method, resource string
		lookup           func() error
	}{
		{"FindAllByDnsName", "vm1", func() error { _, err := si.FindAllByDnsName(t.Context(), dc, "vm1", true); return err }},
		{"FindByIp", "vm1", func() error { _, err := si.FindByIp(t.Context(), dc, "fd00::3", true); return err }},
		{"FindAllByDnsName", "ghost", func() error { _, err := si.FindAllByDnsName(t.Context(), dc, "ghost", true); return err }},
		{"FindByIp", "ghost", func() error { _, err := si.FindByIp(t.Context(), dc, "ghost", true); return err }},
		{"FindByIp", "", func() error { _, err := si.FindByIp(t.Context(), dc, "192.0.2.1", true); return err }},
	}
	for _, l := range lookups {
		if err := l.lookup(); err != nil {
			t.Fatalf("%s: %v", l.method, err)
		}
	}
	got := c.calls.since(mark).Calls
	if len(got) != len(lookups) {
		t.Fatalf("calls after the lookups: %+v", got)
	}
	for i, l := range lookups {
		if got[i].Method != l.method || got[i].Resource != l.resource || got[i].Error != "" {
			t.Errorf("call %d: %+v, want %s about %q", i, got[i], l.method, l.resource)
		}
	}

	if err := c.Close(); err != nil {
		t.Error(err)
	}
	closed = true
	for _, f := range []string{ReadyFile, ControlSocket} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after Close: %v", f, err)
		}
	}
}

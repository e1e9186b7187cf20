package driver

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ini     string
		want    *config // only the fields set are compared, plus host and port
		wantErr string
	}{
		{
			name: "what vsphere-cloud writes",
			ini: `; a comment
[Global]
user = "ccm@vsphere.local"
password = "p;a#ss"
port = "18989"
insecure-flag = false
ca-file = "/run/vsphere-ca.pem"
ip-family = "ipv4"

[VirtualCenter "127.0.0.1"]
datacenters = "DC0"

[Labels]
region = "k8s-region"
zone = "k8s-zone"

[Nodes]
internal-vm-network-name = "VM Network"
external-vm-network-name = "External Network"
`,
			want: &config{host: "127.0.0.1", port: "18989", user: "ccm@vsphere.local", password: "p;a#ss", caFile: "/run/vsphere-ca.pem",
				datacenters: []string{"DC0"}, ipFamilies: []string{"ipv4"}, regionCategory: "k8s-region", zoneCategory: "k8s-zone",
				internalNetwork: "VM Network", externalNetwork: "External Network"},
		},
		{
			name: "the virtual center's values win, unquoted values and trailing comments",
			ini: `[Global]
user = global
password = global
port = 443
insecure-flag = true
datacenters = A, B
ip-family = ipv4,ipv6 ; dual

[VirtualCenter "vc.example"]
user = vc
password = vc
port = 8443
`,
			want: &config{host: "vc.example", port: "8443", user: "vc", password: "vc", insecure: true,
				datacenters: []string{"A", "B"}, ipFamilies: []string{"ipv4", "ipv6"}},
		},
		{
			name: "the family list is kept untrimmed, as the CCM keeps it",
			ini:  "[Global]\nserver = vc\nip-family = \"ipv4, ipv6\"\n",
			want: &config{host: "vc", port: "443", ipFamilies: []string{"ipv4", " ipv6"}},
		},
		{
			name: "subnets",
			ini:  "[Global]\nserver = vc\n[Nodes]\ninternal-network-subnet-cidr = \"10.0.0.0/8,fd00::/8\"\nexclude-external-network-subnet-cidr = 192.0.2.0/24\n",
			want: &config{host: "vc", port: "443", ipFamilies: []string{"ipv4"}},
		},
		{name: "no vCenter", ini: "[Global]\nuser = u\n", wantErr: "no vCenter"},
		{name: "two vCenters", ini: "[VirtualCenter \"a\"]\n[VirtualCenter \"b\"]\n", wantErr: "more than one"},
		{name: "a bad subnet", ini: "[Global]\nserver = vc\n[Nodes]\ninternal-network-subnet-cidr = 10.0.0.0/33\n", wantErr: "internal-network-subnet-cidr"},
		{name: "a value outside a section", ini: "user = u\n", wantErr: "outside any section"},
		{name: "an unterminated string", ini: "[Global]\nuser = \"u\n", wantErr: "unterminated"},
		{name: "no equals sign", ini: "[Global]\nuser\n", wantErr: "key = value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "vsphere.conf")
			if err := os.WriteFile(path, []byte(tc.ini), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readConfig(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("readConfig: got %v, want an error mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "subnets" {
				if len(got.internalSubnets) != 2 || len(got.excludeExternal) != 1 || got.internalSubnets[1].String() != "fd00::/8" {
					t.Errorf("subnets: internal %v, exclude external %v", got.internalSubnets, got.excludeExternal)
				}
				got.internalSubnets, got.excludeExternal = nil, nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("readConfig:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

package leadermigration

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	migrationconfig "k8s.io/controller-manager/pkg/leadermigration/config"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// The files the specs write must be what controller managers accept.
func TestMigrationConfigIsReadByControllerManagers(t *testing.T) {
	cfg := newMigrationConfig("lm-lease", componentCCM, []string{"service-lb-controller", "node-route-controller"}).
		assign("service-lb-controller", componentKCM)
	path, err := cfg.write(t.TempDir(), "lm")
	if err != nil {
		t.Fatal(err)
	}
	got, err := migrationconfig.ReadLeaderMigrationConfiguration(path)
	if err != nil {
		t.Fatalf("upstream cannot read the configuration: %v", err)
	}
	if errs := migrationconfig.ValidateLeaderMigrationConfiguration(got); len(errs) > 0 {
		t.Fatalf("upstream rejects the configuration: %v", errs)
	}
	if got.LeaderName != "lm-lease" || got.ResourceLock != "leases" {
		t.Errorf("leaderName %q, resourceLock %q; want lm-lease, leases", got.LeaderName, got.ResourceLock)
	}
	var leaders []controllerLeader
	for _, l := range got.ControllerLeaders {
		leaders = append(leaders, controllerLeader{Name: l.Name, Component: l.Component})
	}
	want := []controllerLeader{{"service-lb-controller", componentKCM}, {"node-route-controller", componentCCM}}
	if !reflect.DeepEqual(leaders, want) {
		t.Errorf("controller leaders %v, want %v", leaders, want)
	}
	if owned := cfg.ownedBy(componentCCM); !reflect.DeepEqual(owned, []string{"node-route-controller"}) {
		t.Errorf("ownedBy(ccm) = %v", owned)
	}
}

func TestMigratedControllersFollowCapabilities(t *testing.T) {
	p := &profile.Profile{Capabilities: []profile.Capability{profile.LoadBalancer, profile.NodeLifecycle}}
	if got, want := migratedControllers(p), []string{"service-lb-controller", "cloud-node-lifecycle-controller"}; !reflect.DeepEqual(got, want) {
		t.Errorf("migratedControllers = %v, want %v", got, want)
	}
	if kcmNameOf("node-route-controller") != "route-controller" || isCloudController("cloud-node-controller") {
		t.Error("the cloud controller table is wrong")
	}
}

func TestHealthzControllers(t *testing.T) {
	body := "[+]ping ok\n[+]leaderElection ok\n[+]cloud-node-controller ok\n[-]service-lb-controller failed: reason withheld\n[+]poststarthook/x ok\nhealthz check failed\n"
	if got, want := healthzControllers(body), []string{"cloud-node-controller", "service-lb-controller"}; !reflect.DeepEqual(got, want) {
		t.Errorf("healthzControllers = %v, want %v", got, want)
	}
	if got := healthzControllers("ok"); got != nil {
		t.Errorf("plain ok gives %v, want none", got)
	}
}

func TestConfigzMigration(t *testing.T) {
	body := []byte(`{"cloudcontrollermanager.config.k8s.io":{"Generic":{"LeaderMigrationEnabled":true,"LeaderMigration":{"leaderName":"cloud-provider-extraction-migration","resourceLock":"leases","controllerLeaders":[{"name":"route-controller","component":"*"},{"name":"service-controller","component":"*"}]}}}}`)
	enabled, cfg, err := configzMigration(body)
	if err != nil || !enabled {
		t.Fatalf("configzMigration: enabled %v, err %v", enabled, err)
	}
	if got, want := cfg.controllerNames(), []string{"route-controller", "service-controller"}; !reflect.DeepEqual(got, want) || cfg.LeaderName != defaultMigrationLease {
		t.Errorf("controllers %v lease %q, want %v %q", got, cfg.LeaderName, want, defaultMigrationLease)
	}
	if _, _, err := configzMigration([]byte(`{}`)); err == nil {
		t.Error("an empty /configz gives no error")
	}
}

func TestCallerTakeBacks(t *testing.T) {
	call := func(seq int64, caller string) clouddriver.Call {
		return clouddriver.Call{Seq: seq, Time: time.Unix(seq, 0), Operation: clouddriver.OpEnsureLoadBalancer, Caller: caller}
	}
	tests := []struct {
		name  string
		calls []clouddriver.Call
		want  int
	}{
		{name: "none"},
		{name: "one turn each", calls: []clouddriver.Call{call(1, "a"), call(2, "a"), call(3, "b"), call(4, "c"), call(5, "c")}},
		{name: "a comes back", calls: []clouddriver.Call{call(1, "a"), call(2, "b"), call(3, "a"), call(4, "b")}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := callerTakeBacks(tt.calls)
			if len(got) != tt.want {
				t.Errorf("callerTakeBacks = %q, want %d", got, tt.want)
			}
		})
	}
	got := callerTakeBacks([]clouddriver.Call{call(1, "a"), call(2, "b"), call(3, "a")})
	if want := `EnsureLoadBalancer by caller "a" (seq 3) after caller "b" had taken over (seq 2)`; len(got) != 1 || got[0] != want {
		t.Errorf("callerTakeBacks = %q, want [%q]", got, want)
	}
}

// readMigrationConfig reads what providers ship, and says which file is
// wrong when it cannot.
func TestReadMigrationConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name    string
		path    string
		want    migrationConfig
		wantErr string
	}{
		{
			name: "the reference provider's", path: filepath.Join("..", "..", "providers", "reference", "deploy", "leader-migration.yaml"),
			want: newMigrationConfig(defaultMigrationLease, componentAny,
				[]string{"service-lb-controller", "node-route-controller", "cloud-node-lifecycle-controller"}),
		},
		{name: "missing", path: filepath.Join(dir, "absent.yaml"), wantErr: "absent.yaml: no such file"},
		{name: "not YAML", path: write("bad.yaml", "leaderName: [\n"), wantErr: "bad.yaml"},
		{name: "wrong kind", path: write("kind.yaml", "apiVersion: v1\nkind: ConfigMap\nleaderName: x\n"),
			wantErr: `kind.yaml: apiVersion "v1", kind "ConfigMap"`},
		{name: "no lease", path: write("lease.yaml", "apiVersion: controllermanager.config.k8s.io/v1\nkind: LeaderMigrationConfiguration\n"),
			wantErr: "lease.yaml: leaderName is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readMigrationConfig(tt.path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			// Upstream accepts it too.
			upstream, err := migrationconfig.ReadLeaderMigrationConfiguration(tt.path)
			if err != nil {
				t.Fatalf("upstream cannot read it: %v", err)
			}
			if errs := migrationconfig.ValidateLeaderMigrationConfiguration(upstream); len(errs) > 0 {
				t.Fatalf("upstream rejects it: %v", errs)
			}
		})
	}
}

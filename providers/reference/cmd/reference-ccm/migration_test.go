package main

import (
	"reflect"
	"testing"

	cmconfig "k8s.io/controller-manager/config"
	migrationconfig "k8s.io/controller-manager/pkg/leadermigration/config"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloud"
)

func TestApplyMigrationDefects(t *testing.T) {
	leaders := func(pairs ...string) []cmconfig.ControllerLeaderConfiguration {
		var out []cmconfig.ControllerLeaderConfiguration
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, cmconfig.ControllerLeaderConfiguration{Name: pairs[i], Component: pairs[i+1]})
		}
		return out
	}
	upstreamDefault := migrationconfig.DefaultLeaderMigrationConfiguration().ControllerLeaders
	shipped := leaders("service-lb-controller", "*", "node-route-controller", "*", "cloud-node-lifecycle-controller", "*")
	tests := []struct {
		name     string
		disabled bool
		given    []cmconfig.ControllerLeaderConfiguration
		defects  []cloud.Defect
		want     []cmconfig.ControllerLeaderConfiguration
	}{
		{name: "without defects the shipped configuration is kept", given: shipped, want: shipped},
		{name: "without defects upstream's default is kept, names and all", given: upstreamDefault, want: upstreamDefault},
		{name: "service-outside-migration-lease drops the service controller", given: shipped,
			defects: []cloud.Defect{cloud.DefectServiceOutsideMigration},
			want:    leaders("node-route-controller", "*", "cloud-node-lifecycle-controller", "*")},
		{name: "other defects change nothing", given: shipped,
			defects: []cloud.Defect{cloud.DefectKeepRoutes}, want: shipped},
		{name: "nothing changes while migration is off", disabled: true, given: shipped,
			defects: []cloud.Defect{cloud.DefectServiceOutsideMigration}, want: shipped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			given := append([]cmconfig.ControllerLeaderConfiguration(nil), tt.given...)
			generic := &cmconfig.GenericControllerManagerConfiguration{
				LeaderMigrationEnabled: !tt.disabled,
				LeaderMigration:        cmconfig.LeaderMigrationConfiguration{LeaderName: "lm", ControllerLeaders: given},
			}
			defects := cloud.Defects{}
			for _, d := range tt.defects {
				defects[d] = true
			}
			applyMigrationDefects(generic, defects)
			if got := generic.LeaderMigration.ControllerLeaders; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("controller leaders = %v, want %v", got, tt.want)
			}
			if !reflect.DeepEqual(given, tt.given) {
				t.Errorf("the configuration passed in was changed in place: %v", given)
			}
			if generic.LeaderMigration.LeaderName != "lm" {
				t.Errorf("leader name changed to %q", generic.LeaderMigration.LeaderName)
			}
		})
	}
}

package main

import (
	"reflect"
	"testing"

	cmconfig "k8s.io/controller-manager/config"
	migrationconfig "k8s.io/controller-manager/pkg/leadermigration/config"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloud"
)

func TestAdjustLeaderMigration(t *testing.T) {
	leaders := func(pairs ...string) []cmconfig.ControllerLeaderConfiguration {
		var out []cmconfig.ControllerLeaderConfiguration
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, cmconfig.ControllerLeaderConfiguration{Name: pairs[i], Component: pairs[i+1]})
		}
		return out
	}
	upstreamDefault := migrationconfig.DefaultLeaderMigrationConfiguration().ControllerLeaders
	fromFile := leaders("service-lb-controller", "cloud-controller-manager", "node-route-controller", "kube-controller-manager")
	tests := []struct {
		name       string
		disabled   bool
		configFile string
		given      []cmconfig.ControllerLeaderConfiguration
		defects    []cloud.Defect
		want       []cmconfig.ControllerLeaderConfiguration
	}{
		{name: "the default gets this CCM's names", given: upstreamDefault,
			want: leaders("node-route-controller", "*", "service-lb-controller", "*", "cloud-node-lifecycle-controller", "*")},
		{name: "a configuration file is kept as it is", configFile: "lm.yaml", given: fromFile, want: fromFile},
		{name: "a configuration file with kube-controller-manager's names is kept too", configFile: "lm.yaml", given: upstreamDefault, want: upstreamDefault},
		{name: "nothing changes while migration is off", disabled: true, given: upstreamDefault, want: upstreamDefault},
		{name: "upstream-migration-default keeps upstream's default", given: upstreamDefault,
			defects: []cloud.Defect{cloud.DefectUpstreamMigrationDefault}, want: upstreamDefault},
		{name: "service-outside-migration-lease drops the service controller from a file", configFile: "lm.yaml", given: fromFile,
			defects: []cloud.Defect{cloud.DefectServiceOutsideMigration},
			want:    leaders("node-route-controller", "kube-controller-manager")},
		{name: "service-outside-migration-lease drops it from the default", given: upstreamDefault,
			defects: []cloud.Defect{cloud.DefectServiceOutsideMigration},
			want:    leaders("node-route-controller", "*", "cloud-node-lifecycle-controller", "*")},
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
			adjustLeaderMigration(generic, tt.configFile, defects)
			if got := generic.LeaderMigration.ControllerLeaders; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("controller leaders = %v, want %v", got, tt.want)
			}
			if generic.LeaderMigration.LeaderName != "lm" {
				t.Errorf("leader name changed to %q", generic.LeaderMigration.LeaderName)
			}
		})
	}
}

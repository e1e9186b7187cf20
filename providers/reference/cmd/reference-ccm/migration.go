package main

import (
	"slices"

	"k8s.io/cloud-provider/names"
	cmconfig "k8s.io/controller-manager/config"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloud"
)

// kcmControllerNames maps the names kube-controller-manager gave the cloud
// controllers, which k8s.io/cloud-provider's default leader migration
// configuration still uses, to the names this CCM registers them under.
// The migration lock matches names exactly (it does not resolve the
// --controllers aliases), so a default left as it is covers only
// cloud-node-lifecycle-controller.
var kcmControllerNames = map[string]string{
	"route-controller":   names.NodeRouteController,
	"service-controller": names.ServiceLBController,
}

// adjustLeaderMigration corrects the leader migration configuration the
// CCM read from its flags, before the CCM runs with it. configFile is the
// --leader-migration-config value.
//
// Without a configuration file, the CCM gets k8s.io/cloud-provider's
// default, which names route-controller and service-controller: no
// controller of a CCM has those names, so the CCM would start its route and
// service controllers under its main lease at once, while
// kube-controller-manager may still run them under the migration lease.
// The reference CCM renames them to its own controllers, as any provider's
// main can; docs/leader-migration.md shows the finding.
//
// The defects put the upstream behaviour back (DefectUpstreamMigrationDefault)
// or drop service-lb-controller from whatever configuration was given
// (DefectServiceOutsideMigration).
func adjustLeaderMigration(generic *cmconfig.GenericControllerManagerConfiguration, configFile string, defects cloud.Defects) {
	if !generic.LeaderMigrationEnabled {
		return
	}
	leaders := slices.Clone(generic.LeaderMigration.ControllerLeaders)
	if configFile == "" && !defects.Has(cloud.DefectUpstreamMigrationDefault) {
		for i, l := range leaders {
			if name, ok := kcmControllerNames[l.Name]; ok {
				leaders[i].Name = name
			}
		}
	}
	if defects.Has(cloud.DefectServiceOutsideMigration) {
		leaders = slices.DeleteFunc(leaders, func(l cmconfig.ControllerLeaderConfiguration) bool {
			return l.Name == names.ServiceLBController
		})
	}
	generic.LeaderMigration.ControllerLeaders = leaders
}

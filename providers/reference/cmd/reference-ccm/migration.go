package main

import (
	"slices"
	"time"

	"k8s.io/cloud-provider/names"
	cmconfig "k8s.io/controller-manager/config"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloud"
)

// applyMigrationDefects changes the leader migration configuration the CCM
// read from its flags, before the CCM runs with it, when a defect asks for
// it: DefectMigrationLeaseTriedOnce makes every lease a one-shot try
// (an hour between tries); DefectServiceOutsideMigration drops service-lb-controller from the
// configuration, so the CCM runs its service controller under its main
// lease even while another manager holds the migration lease. Without
// defects the configuration is left exactly as k8s.io/cloud-provider built
// it, so the reference CCM behaves as any CCM built on it does.
func applyMigrationDefects(generic *cmconfig.GenericControllerManagerConfiguration, defects cloud.Defects) {
	if generic.LeaderMigrationEnabled && defects.Has(cloud.DefectMigrationLeaseTriedOnce) {
		// The elector tries at once, then once a retry period later.
		generic.LeaderElection.LeaseDuration.Duration = 3 * time.Hour
		generic.LeaderElection.RenewDeadline.Duration = 2 * time.Hour
		generic.LeaderElection.RetryPeriod.Duration = time.Hour
	}
	if !generic.LeaderMigrationEnabled || !defects.Has(cloud.DefectServiceOutsideMigration) {
		return
	}
	generic.LeaderMigration.ControllerLeaders = slices.DeleteFunc(slices.Clone(generic.LeaderMigration.ControllerLeaders),
		func(l cmconfig.ControllerLeaderConfiguration) bool { return l.Name == names.ServiceLBController })
}

package reports_test

import (
	"testing"

	"github.com/ccm-conformance/ccm-conformance/testsupport/floors"
)

// The reports stand on their own floor: what reads and judges results
// (the Prow layout, the store, the LKG rules, the dashboard, TestGrid's
// configuration, and the store's test emulators) links nothing of the
// harness but the leaves, so a dashboard job or a release-team check does
// not build the framework. Only reports/rundir, the run directory's
// writer, knows the runner.
func TestReportsImportNothingOfTheFramework(t *testing.T) {
	floors.Check(t, floors.Rule{
		Floor: []string{"reports/prow", "reports/store", "reports/lkg", "reports/dashboard", "reports/testgrid"},
		May:   []string{"reports/prow", "reports/store", "reports/lkg", "internal", "labels", "kubeversion"},
	}, 6, "./prow", "./store", "./store/storetest", "./lkg", "./dashboard", "./testgrid")
}

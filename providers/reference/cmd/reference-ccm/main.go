// Command reference-ccm is the reference provider's cloud-controller-manager:
// the upstream CCM of k8s.io/cloud-provider/app with the reference cloud
// provider plugged in. It is set up the way k8s.io/cloud-provider's
// sample/basic_main.go shows every external provider setting up its CCM.
// For leader migration it ships deploy/leader-migration.yaml, to be passed
// as --leader-migration-config (docs/leader-migration.md).
//
//	reference-ccm --kubeconfig=... --cloud-config=cloud.yaml \
//	    --reference-identity=ccm-1 --reference-defects=wrong-zone
//
// --cloud-provider defaults to "reference". See docs/reference-provider.md.
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included: its
// module (providers/go.mod) requires neither, and testsupport/floors
// checks it package by package.
package main

import (
	"io"
	"os"

	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudcontrollerconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics on /metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric
	"k8s.io/klog/v2"

	"github.com/ccm-conformance/ccm-conformance/providers/reference/cloud"
)

func main() {
	ccmOptions, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		klog.ErrorS(err, "Unable to initialize the command options")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	// This binary only ever runs the reference provider.
	ccmOptions.KubeCloudShared.CloudProvider.Name = cloud.ProviderName

	// The provider's own flags go in a named flag set of their own, shown
	// as a section of --help.
	referenceOptions := cloud.NewOptions()
	additionalFlags := cliflag.NamedFlagSets{}
	referenceOptions.AddFlags(additionalFlags.FlagSet("reference"))

	// The factory runs when the CCM initializes the cloud, after the flags
	// are parsed, so it sees the final referenceOptions.
	cloudprovider.RegisterCloudProvider(cloud.ProviderName, func(config io.Reader) (cloudprovider.Interface, error) {
		return cloud.New(config, *referenceOptions)
	})

	// The CCM calls the cloud initializer with the completed configuration
	// just before it runs the controllers: the last moment a defect can
	// change the leader migration configuration (see migration.go).
	initialize := func(config *cloudcontrollerconfig.CompletedConfig) cloudprovider.Interface {
		applyMigrationDefects(&config.ComponentConfig.Generic, referenceOptions.Defects)
		return initializeCloud(config)
	}

	command := app.NewCloudControllerManagerCommand(ccmOptions, initialize,
		app.DefaultInitFuncConstructors, names.CCMControllerAliases(), additionalFlags, wait.NeverStop)
	os.Exit(cli.Run(command))
}

// initializeCloud builds the cloud provider named by --cloud-provider from
// the --cloud-config file. The CCM cannot run without it, so a failure
// ends the process.
func initializeCloud(config *cloudcontrollerconfig.CompletedConfig) cloudprovider.Interface {
	provider := config.ComponentConfig.KubeCloudShared.CloudProvider
	c, err := cloudprovider.InitCloudProvider(provider.Name, provider.CloudConfigFile)
	if err != nil {
		klog.ErrorS(err, "Cloud provider could not be initialized", "provider", provider.Name, "cloudConfig", provider.CloudConfigFile)
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	if c == nil {
		klog.ErrorS(nil, "Unknown cloud provider; this CCM only runs --cloud-provider="+cloud.ProviderName, "provider", provider.Name)
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	return c
}

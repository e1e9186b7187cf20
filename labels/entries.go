package labels

// Names of the ginkgo report entries that the suites and the harness
// write and the reports read: one home, so that a writer and its readers
// cannot drift apart.
const (
	// EntryNodeInitialized is how long the CCM took to initialize a node
	// that joined (a duration; suites/nodeaddress).
	EntryNodeInitialized = "node-initialized"
	// EntryLoadBalancerReady is how long a Service of type LoadBalancer
	// took to get its ingress (a duration; suites/loadbalancer).
	EntryLoadBalancerReady = "load-balancer-ready"
	// EntryObservationLag is, for a watched wait, how long after the
	// change the harness saw it (a duration; framework's Watch). The run
	// directory keeps their 99th percentile in timings.json.
	EntryObservationLag = "observation-lag"
	// EntryDriverFault is the cloud driver's broken protocol in a failed
	// spec (a message; framework/runner), so that the failure counts
	// against the driver, not the CCM.
	EntryDriverFault = "cloud-driver-fault"
	// EntryCCMEnded says, in a failed spec, that the CCM under test had
	// ended when nothing stopped it (a message: how, and its last log
	// lines; framework/runner), so that the failure reads as a CCM that
	// is gone rather than one that does not act.
	EntryCCMEnded = "ccm-ended"
)

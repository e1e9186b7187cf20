// Package vsphere is the vSphere provider of the conformance harness: the
// real, unmodified vSphere CCM (k8s.io/cloud-provider-vsphere v1.36.0,
// cmd/vsphere-cloud-controller-manager, built from its module by the
// harness) against VMware's own vCenter simulator, with a cloud driver.
// Its profile is providers/profiles/vsphere.yaml. Like every provider it
// never imports the harness; the harness talks to it as to any CCM and
// cloud: a process, a cloud config, a cloud driver.
//
// # What is here
//
//   - cloud, cmd/vsphere-cloud: the simulated vCenter. govmomi v0.53.0's
//     simulator (package simulator, a VPX model) and its vAPI simulator
//     (vapi/simulator, for tags), served over TLS on the profile's port.
//     The inventory: one datacenter tagged with the region (category
//     k8s-region), one cluster per zone tagged with its zone (k8s-zone), a
//     few hosts per cluster, the simulator's "VM Network" and an "External
//     Network", two IP pools, and no virtual machines. It writes the CCM's
//     INI cloud config (vsphere.conf, with [Labels] and [Nodes]) and the CA
//     it serves with into the run's directory, then vsphere-cloud.ready.
//   - driver, cmd/vsphere-cloud-driver: the cloud driver (protocol v1,
//     docs/cloud-driver.md).
//   - simctl: the simulator's control channel, HTTP on a unix socket in the
//     run's directory, for what no vCenter offers.
//
// # What is simulated, and how the CCM sees it
//
// A node is a VM. The driver makes one the way a vSphere administrator
// would: CreateVM_Task in the cluster of the zone, with a NIC on each
// network, addresses taken from the IP pools (IpPoolManager), a guest
// customization (CustomizeVM_Task) that gives the guest its host name (the
// node's name) and addresses, PowerOnVM_Task, and then a wait until the
// guest reports both: until then the CCM cannot find the VM (it looks a
// new node up with SearchIndex.FindAllByDnsName on the guest's host name
// and refuses a VM without a host name or a non-loopback IP). Stop and
// start are power operations; delete powers off, destroys and gives the
// addresses back.
//
// The driver reports each Instance field as the CCM derives it from the
// same VM, reading the CCM's own cloud config for the rules
// (driver/mapping.go names the upstream function of each rule):
//
//   - providerID: vsphere:// and the BIOS UUID, lower case;
//   - instanceType: vsphere-vm.cpu-N.mem-Mgb.os-linux;
//   - zone and region: the tags found from the VM's host upwards;
//   - addresses: Hostname (the guest's host name), and for each family of
//     ip-family one InternalIP (the first address of the NIC on the
//     internal network) and one ExternalIP (the first of the NIC on the
//     external network). Further addresses of a family, loopback and
//     link-local ones are held by the VM but are no node addresses: the
//     CCM takes only those.
//
// # What is simulator-only, and why
//
//   - instance set-addresses: in vSphere a VM's addresses are what VMware
//     Tools inside the guest reports (guest.net, guest.hostName); no API
//     sets them. The control channel writes them into the simulator's
//     object as Tools would, and watchers see the change. Guest
//     customization, which the driver uses at creation, is real vSphere
//     API, but govmomi's simulator applies only its IPv4 part, so an IPv6
//     address at creation goes through the control channel too.
//   - fault inject, fault clear: a vCenter cannot be told to fail one
//     client's calls. The control channel adds the simulator's own fault
//     injection rules (simulator.FaultInjectionRule) on the SearchIndex
//     methods with which the CCM finds a node's VM (FindByUuid,
//     FindAllByDnsName, FindByIp and their siblings). The driver never
//     calls the SearchIndex, so the faults reach only the CCM.
//     InstanceShutdown of a VM the CCM has already found reads its power
//     state through the property collector, which no fault touches.
//   - calls list: a vCenter keeps no log of the SOAP calls it served. The
//     simulated one logs every call on its SDK: the method, the VM it was
//     about (by reference, UUID, DNS name or IP, resolved to the VM's
//     name), the fault string, and the caller: the User-Agent, the user and
//     a digest of the session cookie, so two CCM processes with the same
//     credentials are two callers. The driver's own calls carry its
//     User-Agent and are left out. The vAPI (tag) calls are not logged.
//
// The driver lists the simulator-only verbs only when
// $VSPHERE_CONTROL_SOCKET names the control socket; against a real vCenter
// (a cloud config of its own, $VSPHERE_DRIVER_USER) it offers the rest.
//
// # What the CCM cannot do here
//
// Load balancers and routes need NSX-T, which is not simulated: the
// profile claims node capabilities only. Dual-stack needs the CCM's alpha
// gate (ENABLE_ALPHA_DUAL_STACK) and ip-family "ipv4,ipv6"
// (vsphere-cloud --ip-family), and then the CCM refuses every VM that lacks
// an address of either family (nodemanager.go, DiscoverNode: "unable to
// find suitable IP address for node ... with IP family [ipv4 ipv6]"). Run
// so on 2026-12-05 (the profile with those two changes, cluster.ipFamilies
// [IPv4, IPv6]), the CCM initialized the dual-stack nodes with an
// InternalIP and an ExternalIP of each family and passed every node
// addressing spec, and refused the single-family instances that other
// specs make; so the profile stays IPv4, and the cloud and the driver keep
// dual-stack for a profile of its own (driver.TestIntegrationDualStack).
//
// # By hand
//
//	vsphere-cloud --dir /tmp/vs --listen 127.0.0.1:8989 &
//	export VSPHERE_CLOUD_CONFIG=/tmp/vs/vsphere.conf VSPHERE_CONTROL_SOCKET=/tmp/vs/vsphere-control.sock
//	echo '{"name":"n1"}' | vsphere-cloud-driver instance create
//	vsphere-cloud-controller-manager --cloud-config=/tmp/vs/vsphere.conf --kubeconfig=... --leader-elect=false
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included: its
// module (providers/go.mod) requires neither, and testsupport/floors
// checks it package by package.
package vsphere

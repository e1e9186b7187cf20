// Package aws is the AWS provider of the conformance harness: the real,
// unmodified AWS CCM (k8s.io/cloud-provider-aws v1.37.1,
// cmd/aws-cloud-controller-manager, built from its module by the harness)
// against an emulator of the parts of EC2 and classic Elastic Load
// Balancing it calls, with a cloud driver. Its profile is
// providers/profiles/aws.yaml. Like every provider it never imports the
// harness; the harness talks to it as to any CCM and cloud: a process, a
// cloud config, a cloud driver.
//
// # What is here
//
//   - cloud, cmd/aws-cloud: the emulator. EC2 (API version 2016-11-15),
//     classic Elastic Load Balancing (2012-06-01) and Elastic Load
//     Balancing v2 (2015-12-01) over their Query protocols on one HTTP
//     port, told apart by the Version parameter. Every method of the
//     CCM's iface.EC2, ELB and ELBV2 interfaces is served;
//     cloud.TestIntegrationOperationsCoverTheCCM reads those interfaces
//     from the CCM's module source at the profile's version and fails
//     when one is missing. The wire format is tested by round trips
//     through the aws-sdk-go-v2 clients at the versions the CCM links.
//     It writes the CCM's cloud config (aws.conf) and a control socket
//     into the run's directory, then aws-cloud.ready.
//   - driver, cmd/aws-cloud-driver: the cloud driver (protocol v1,
//     docs/cloud-driver.md). It reads the cloud with the AWS SDK, as a
//     driver for real AWS would (DescribeInstances, DescribeLoadBalancers,
//     DescribeSecurityGroups, DescribeRouteTables, CreateRoute,
//     DeleteRoute), and uses the control channel only for what AWS cannot
//     do for a test.
//   - awsctl: the control channel, JSON over HTTP on the unix socket.
//   - deploy/leader-migration.yaml: the leader migration configuration.
//
// # What is emulated, and how the CCM sees it
//
// One account, one region (us-east-1), one VPC, a subnet
// per availability zone tagged for the cluster and for internet-facing
// load balancers (kubernetes.io/role/elb), the VPC's main route table
// tagged for the cluster (the route controller's), and a security group
// for the nodes tagged for the cluster (the one the CCM opens to each load
// balancer's group). A node is an instance whose private DNS name is the
// node's name: the CCM finds a node without a providerID by that name
// (DescribeInstances, filter private-dns-name) and sets
// aws:///<zone>/<instance ID>. An instance has one network interface with
// a private IPv4 address of its zone's subnet, a public IPv4 address
// (203.0.113.0/24) and public DNS name, and an IPv6 address when asked.
// aws-cloud claims a loopback /16 of its own (providers/loopback): the
// VPC is its lower half, 127.X.0.0/17, so a node's InternalIP is where
// its simulated kubelet's kube-proxy answers; load balancers take
// addresses of its upper half. (A cloud built without one, as most unit
// tests do, has the VPC 10.0.0.0/16 and no data path.)
// One more instance, bastion.ec2.internal, has no cluster tag: the driver
// points a route to a node without an instance at it, since an AWS route
// must target something (the routes spec with a route to no node).
//
// The cloud config's [Global] names the zone, VPC, subnet and cluster ID,
// so the CCM builds its own "instance" without the metadata service
// (newAWSCloud2), and a [ServiceOverride] per client (EC2, Elastic Load
// Balancing, v2, KMS, ec2imds) sends every call to the emulator. The CCM
// signs with SigV4 using the profile's key; the emulator requires a
// signature, does not check it, and records the access key ID as the
// caller.
//
// # What is emulator-only, and why
//
//   - instance create: AWS names an instance's private DNS name after its
//     address; a test needs one named like the node it registers. Delete,
//     stop and start go through the control channel too (a driver for
//     real AWS would call TerminateInstances, StopInstances,
//     StartInstances).
//   - instance set-addresses: an instance's addresses are its network
//     interfaces'; the emulator sets them as EC2 would hold them (private
//     IPv4 and IPv6 addresses, one public address and DNS name) and
//     refuses what EC2 cannot hold (two public addresses, another
//     Hostname).
//   - fault inject, fault clear: answers of 503 Unavailable to the CCM's
//     calls on a target (instances: DescribeInstances; routes; load
//     balancers), never to the driver's, which signs with its own key.
//   - calls list: AWS's CloudTrail delivers minutes late; the emulator
//     logs every call as it answers it.
//
// # The data path
//
// A classic load balancer's ingress is its DNS name. Each one listens at
// its own address on each listener's port, admits a client when one of
// its security groups has an ingress rule for TCP at that port from a
// CIDR holding the client's address (the rules the CCM writes from
// loadBalancerSourceRanges), holds any other client without an answer
// as a dropping firewall does, and forwards to its registered instances
// that are running, sit in a zone of one of its subnets and are InService
// by its health check (its Target, Timeout and thresholds, checked every
// second rather than every Interval seconds), round-robin, at the
// listener's instance port. aws-cloud --dns serves the load balancers'
// DNS names (cloud/dns.go), and the profile's
// loadBalancer.ingressNameserver points the harness's probes at it.
// Listeners of every protocol are carried as TCP; no TLS is terminated.
//
// Network Load Balancers (Elastic Load Balancing v2, cloud/elbv2.go), which
// the CCM makes for a Service annotated
// service.beta.kubernetes.io/aws-load-balancer-type: nlb
// (profiles/aws-nlb.yaml): load balancers, instance target groups with
// their health checks and attributes, targets, listeners forwarding to a
// group, tags. The data path serves each listener at the load balancer's
// address and forwards to the group's healthy targets; the client's
// address reaches the instance, so the instance's own security groups
// admit it or drop it, and the health checks, which come from the load
// balancer's address in each of its subnets, likewise. An NLB with security
// groups of its own (the CCM's NLBSecurityGroupMode Managed, which
// aws-cloud --nlb-security-group-mode writes into the cloud config) first
// admits or drops a client by those groups' rules on the listener's port.
//
// # What is left out
//
// KMS: the CCM calls it only for a Service annotated for an encrypted
// listener, which no spec makes. Classic load balancers carry no UDP.
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included: its
// module (providers/go.mod) requires neither, and testsupport/floors
// checks it package by package.
package aws

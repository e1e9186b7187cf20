package driver

import (
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/ccm-conformance/ccm-conformance/providers/driverproto"
)

// toInstance reports an instance as the AWS CCM (k8s.io/cloud-provider-aws
// v1.37.1, pkg/providers/v1) derives a node from it:
//
//   - providerID: aws:///<zone>/<instance ID> (getProviderID: "aws://"
//     and InstanceID's "/<zone>/<id>");
//   - zone: the placement's availability zone; region: the zone without
//     its letter (azToRegion);
//   - instanceType: the instance's type;
//   - addresses (extractIPv4NodeAddresses, the ipv4 family the cloud
//     config keeps by default): an InternalIP for each private address of
//     each in-use network interface, by device index; an ExternalIP for
//     the public address; InternalDNS and Hostname for the private DNS
//     name; ExternalDNS for the public DNS name.
//
// state is running for a running (or pending) instance and stopped for
// any other live one.
func toInstance(in *ec2types.Instance, region string) driverproto.Instance {
	zone := ""
	if in.Placement != nil {
		zone = aws.ToString(in.Placement.AvailabilityZone)
	}
	state := "stopped"
	if in.State != nil && (in.State.Name == ec2types.InstanceStateNameRunning || in.State.Name == ec2types.InstanceStateNamePending) {
		state = "running"
	}
	x := driverproto.Instance{
		ID: aws.ToString(in.InstanceId), Name: aws.ToString(in.PrivateDnsName),
		ProviderID: "aws:///" + zone + "/" + aws.ToString(in.InstanceId),
		Zone:       zone, Region: region, InstanceType: string(in.InstanceType), State: state,
		Addresses: []driverproto.Address{},
	}
	enis := slices.Clone(in.NetworkInterfaces)
	slices.SortStableFunc(enis, func(a, b ec2types.InstanceNetworkInterface) int {
		return int(deviceIndex(a) - deviceIndex(b))
	})
	for _, e := range enis {
		if e.Status != ec2types.NetworkInterfaceStatusInUse {
			continue
		}
		for _, ip := range e.PrivateIpAddresses {
			if a := aws.ToString(ip.PrivateIpAddress); a != "" {
				x.Addresses = append(x.Addresses, driverproto.Address{Type: "InternalIP", Address: a})
			}
		}
	}
	if a := aws.ToString(in.PublicIpAddress); a != "" {
		x.Addresses = append(x.Addresses, driverproto.Address{Type: "ExternalIP", Address: a})
	}
	if n := aws.ToString(in.PrivateDnsName); n != "" {
		x.Addresses = append(x.Addresses, driverproto.Address{Type: "InternalDNS", Address: n}, driverproto.Address{Type: "Hostname", Address: n})
	}
	if n := aws.ToString(in.PublicDnsName); n != "" {
		x.Addresses = append(x.Addresses, driverproto.Address{Type: "ExternalDNS", Address: n})
	}
	return x
}

// deviceIndex sorts interfaces without an attachment last, as the CCM does.
func deviceIndex(e ec2types.InstanceNetworkInterface) int32 {
	if e.Attachment == nil {
		return 1 << 30
	}
	return aws.ToInt32(e.Attachment.DeviceIndex)
}

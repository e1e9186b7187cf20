package cloud

import (
	"encoding/xml"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// EC2Version is the API version of EC2's Query protocol.
const EC2Version = "2016-11-15"

const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// ec2Ops is every EC2 action the emulator serves: the methods of the CCM's
// iface.EC2 (k8s.io/cloud-provider-aws v1.37.1, pkg/providers/v1/iface).
// TestOperationsCoverTheCCM reads that interface from the module's source
// and fails when it names one that is not here.
func ec2Ops() map[string]func(*state, *params) (any, *apiError) {
	return map[string]func(*state, *params) (any, *apiError){
		"DescribeInstances":             (*state).describeInstances,
		"DescribeInstanceTopology":      (*state).describeInstanceTopology,
		"DescribeSecurityGroups":        (*state).describeSecurityGroups,
		"CreateSecurityGroup":           (*state).createSecurityGroup,
		"DeleteSecurityGroup":           (*state).deleteSecurityGroup,
		"AuthorizeSecurityGroupIngress": (*state).authorizeIngress,
		"RevokeSecurityGroupIngress":    (*state).revokeIngress,
		"DescribeSubnets":               (*state).describeSubnets,
		"DescribeAvailabilityZones":     (*state).describeZones,
		"CreateTags":                    (*state).createTags,
		"DeleteTags":                    (*state).deleteTags,
		"DescribeRouteTables":           (*state).describeRouteTables,
		"CreateRoute":                   (*state).createRoute,
		"DeleteRoute":                   (*state).deleteRoute,
		"ModifyInstanceAttribute":       (*state).modifyInstanceAttribute,
		"DescribeVpcs":                  (*state).describeVpcs,
		"DescribeNetworkInterfaces":     (*state).describeNetworkInterfaces,
	}
}

// ec2Response wraps an EC2 answer: <ActionResponse xmlns=...><requestId>,
// then the action's fields.
type ec2Response struct {
	XMLName   xml.Name
	Xmlns     string `xml:"xmlns,attr"`
	RequestID string `xml:"requestId"`
	Body      []byte `xml:",innerxml"`
}

// returnTrue is the body of the actions that answer only <return>true</return>.
type returnTrue struct {
	Return bool `xml:"return"`
}

// ---- instances

type xmlTag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func xmlTags(t tags) *items[xmlTag] {
	var out []xmlTag
	for _, x := range t {
		out = append(out, xmlTag(x))
	}
	return itemsOf(out)
}

type xmlGroupID struct {
	GroupID   string `xml:"groupId"`
	GroupName string `xml:"groupName,omitempty"`
}

type xmlPrivateIP struct {
	PrivateIPAddress string `xml:"privateIpAddress"`
	PrivateDNSName   string `xml:"privateDnsName,omitempty"`
	Primary          bool   `xml:"primary"`
}

type xmlIPv6 struct {
	Ipv6Address string `xml:"ipv6Address"`
}

type xmlAttachment struct {
	AttachmentID string `xml:"attachmentId"`
	DeviceIndex  int32  `xml:"deviceIndex"`
	Status       string `xml:"status"`
	InstanceID   string `xml:"instanceId,omitempty"`
}

type xmlInstanceENI struct {
	NetworkInterfaceID string               `xml:"networkInterfaceId"`
	SubnetID           string               `xml:"subnetId"`
	VpcID              string               `xml:"vpcId"`
	Status             string               `xml:"status"`
	PrivateIPAddress   string               `xml:"privateIpAddress,omitempty"`
	PrivateDNSName     string               `xml:"privateDnsName,omitempty"`
	SourceDestCheck    bool                 `xml:"sourceDestCheck"`
	Groups             *items[xmlGroupID]   `xml:"groupSet"`
	Attachment         xmlAttachment        `xml:"attachment"`
	PrivateIPs         *items[xmlPrivateIP] `xml:"privateIpAddressesSet"`
	IPv6               *items[xmlIPv6]      `xml:"ipv6AddressesSet"`
}

type xmlInstance struct {
	InstanceID       string                 `xml:"instanceId"`
	ImageID          string                 `xml:"imageId"`
	State            xmlState               `xml:"instanceState"`
	PrivateDNSName   string                 `xml:"privateDnsName"`
	DNSName          string                 `xml:"dnsName"`
	InstanceType     string                 `xml:"instanceType"`
	LaunchTime       string                 `xml:"launchTime"`
	Placement        xmlPlacement           `xml:"placement"`
	SubnetID         string                 `xml:"subnetId,omitempty"`
	VpcID            string                 `xml:"vpcId,omitempty"`
	PrivateIPAddress string                 `xml:"privateIpAddress,omitempty"`
	IPAddress        string                 `xml:"ipAddress,omitempty"`
	SourceDestCheck  bool                   `xml:"sourceDestCheck"`
	Groups           *items[xmlGroupID]     `xml:"groupSet"`
	Tags             *items[xmlTag]         `xml:"tagSet"`
	ENIs             *items[xmlInstanceENI] `xml:"networkInterfaceSet"`
}

type xmlState struct {
	Code int32  `xml:"code"`
	Name string `xml:"name"`
}

type xmlPlacement struct {
	AvailabilityZone string `xml:"availabilityZone"`
	Tenancy          string `xml:"tenancy"`
}

type xmlReservation struct {
	ReservationID string              `xml:"reservationId"`
	OwnerID       string              `xml:"ownerId"`
	Instances     *items[xmlInstance] `xml:"instancesSet"`
}

func (s *state) eniID(in *instance) string { return "eni-" + strings.TrimPrefix(in.id, "i-") }

func (s *state) groupIDs(ids []string) *items[xmlGroupID] {
	var out []xmlGroupID
	for _, id := range ids {
		g := xmlGroupID{GroupID: id}
		if sg := s.groups[id]; sg != nil {
			g.GroupName = sg.name
		}
		out = append(out, g)
	}
	return itemsOf(out)
}

func (s *state) xmlInstance(in *instance) xmlInstance {
	x := xmlInstance{
		InstanceID:     in.id,
		ImageID:        "ami-0c0ffee0c0ffee000",
		State:          xmlState{Code: stateCode(in.state), Name: in.state},
		PrivateDNSName: in.privateDNS,
		InstanceType:   in.instanceType,
		LaunchTime:     in.launched.UTC().Format(time.RFC3339),
		Placement:      xmlPlacement{AvailabilityZone: in.zone, Tenancy: "default"},
		Tags:           xmlTags(in.tags),
	}
	if in.state == "terminated" {
		return x
	}
	x.SubnetID, x.VpcID = in.subnet, s.vpcID
	x.SourceDestCheck = in.srcDstCheck
	x.Groups = s.groupIDs(in.groups)
	if in.state == "running" {
		x.IPAddress, x.DNSName = in.publicIP, in.publicDNS
	}
	eni := xmlInstanceENI{
		NetworkInterfaceID: s.eniID(in),
		SubnetID:           in.subnet,
		VpcID:              s.vpcID,
		Status:             "in-use",
		PrivateDNSName:     in.privateDNS,
		SourceDestCheck:    in.srcDstCheck,
		Groups:             s.groupIDs(in.groups),
		Attachment:         xmlAttachment{AttachmentID: "eni-attach-" + strings.TrimPrefix(in.id, "i-"), DeviceIndex: 0, Status: "attached"},
	}
	var ips []xmlPrivateIP
	for i, ip := range in.privateIPs {
		ips = append(ips, xmlPrivateIP{PrivateIPAddress: ip, PrivateDNSName: in.privateDNS, Primary: i == 0})
	}
	if len(in.privateIPs) > 0 {
		x.PrivateIPAddress, eni.PrivateIPAddress = in.privateIPs[0], in.privateIPs[0]
	}
	eni.PrivateIPs = itemsOf(ips)
	var v6 []xmlIPv6
	for _, ip := range in.ipv6 {
		v6 = append(v6, xmlIPv6{Ipv6Address: ip})
	}
	eni.IPv6 = itemsOf(v6)
	x.ENIs = itemsOf([]xmlInstanceENI{eni})
	return x
}

func (s *state) instanceAttrs(in *instance) map[string][]string {
	a := map[string][]string{
		"instance-id":         {in.id},
		"instance-state-name": {in.state},
		"instance-state-code": {strconv.Itoa(int(stateCode(in.state)))},
		"private-dns-name":    {in.privateDNS},
		"instance-type":       {in.instanceType},
		"availability-zone":   {in.zone},
		"vpc-id":              {s.vpcID},
		"subnet-id":           {in.subnet},
		"private-ip-address":  in.privateIPs,
		"ip-address":          {in.publicIP},
		"dns-name":            {in.publicDNS},
		"network-interface.addresses.private-ip-address": in.privateIPs,
		"instance.group-id": in.groups,
	}
	return a
}

func (s *state) describeInstances(p *params) (any, *apiError) {
	ids := p.strs("InstanceId")
	for _, id := range ids {
		if s.instances[id] == nil {
			return nil, errCode("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	var res []xmlReservation
	for _, id := range s.order {
		in := s.instances[id]
		if len(ids) > 0 && !slices.Contains(ids, id) {
			continue
		}
		ok, err := match(p.filters(), s.instanceAttrs(in), in.tags)
		if err != nil {
			return nil, err
		}
		if ok {
			res = append(res, xmlReservation{
				ReservationID: "r-" + strings.TrimPrefix(in.id, "i-"),
				OwnerID:       s.account,
				Instances:     itemsOf([]xmlInstance{s.xmlInstance(in)}),
			})
		}
	}
	return struct {
		Reservations *items[xmlReservation] `xml:"reservationSet"`
	}{itemsOf(res)}, nil
}

// describeInstanceTopology answers as EC2 does for instance types that
// have no topology (the emulator's types): an empty set.
func (s *state) describeInstanceTopology(p *params) (any, *apiError) {
	return struct {
		Instances *items[struct{}] `xml:"instanceSet"`
	}{}, nil
}

func (s *state) modifyInstanceAttribute(p *params) (any, *apiError) {
	in := s.instances[p.str("InstanceId")]
	if in == nil {
		return nil, errCode("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", p.str("InstanceId"))
	}
	switch {
	case p.has("SourceDestCheck"):
		in.srcDstCheck = p.get("SourceDestCheck").str("Value") == "true"
	case p.has("GroupId"):
		groups := p.strs("GroupId")
		for _, g := range groups {
			if s.groups[g] == nil {
				return nil, errCode("InvalidGroup.NotFound", "The security group '%s' does not exist", g)
			}
		}
		in.groups = groups
	default:
		return nil, errCode("InvalidParameterCombination", "the emulator changes only SourceDestCheck and GroupId")
	}
	return returnTrue{true}, nil
}

// ---- network interfaces

type xmlENI struct {
	NetworkInterfaceID string               `xml:"networkInterfaceId"`
	SubnetID           string               `xml:"subnetId"`
	VpcID              string               `xml:"vpcId"`
	AvailabilityZone   string               `xml:"availabilityZone"`
	Description        string               `xml:"description"`
	InterfaceType      string               `xml:"interfaceType"`
	Status             string               `xml:"status"`
	PrivateIPAddress   string               `xml:"privateIpAddress,omitempty"`
	PrivateDNSName     string               `xml:"privateDnsName,omitempty"`
	SourceDestCheck    bool                 `xml:"sourceDestCheck"`
	Groups             *items[xmlGroupID]   `xml:"groupSet"`
	Attachment         xmlAttachment        `xml:"attachment"`
	PrivateIPs         *items[xmlPrivateIP] `xml:"privateIpAddressesSet"`
	IPv6               *items[xmlIPv6]      `xml:"ipv6AddressesSet"`
}

func (s *state) describeNetworkInterfaces(p *params) (any, *apiError) {
	ids := p.strs("NetworkInterfaceId")
	var out []xmlENI
	for _, id := range s.order {
		in := s.instances[id]
		if in.state == "terminated" {
			continue
		}
		x := s.xmlInstance(in).ENIs.Items[0]
		e := xmlENI{
			NetworkInterfaceID: x.NetworkInterfaceID, SubnetID: x.SubnetID, VpcID: x.VpcID,
			AvailabilityZone: in.zone, Description: "", InterfaceType: "interface", Status: x.Status,
			PrivateIPAddress: x.PrivateIPAddress, PrivateDNSName: x.PrivateDNSName, SourceDestCheck: x.SourceDestCheck,
			Groups: x.Groups, Attachment: x.Attachment, PrivateIPs: x.PrivateIPs, IPv6: x.IPv6,
		}
		e.Attachment.InstanceID = in.id
		if len(ids) > 0 && !slices.Contains(ids, e.NetworkInterfaceID) {
			continue
		}
		attrs := map[string][]string{
			"network-interface-id":         {e.NetworkInterfaceID},
			"attachment.instance-id":       {in.id},
			"private-ip-address":           in.privateIPs,
			"addresses.private-ip-address": in.privateIPs,
			"vpc-id":                       {s.vpcID},
			"subnet-id":                    {in.subnet},
			"availability-zone":            {in.zone},
			"status":                       {e.Status},
			"description":                  {e.Description},
			"interface-type":               {e.InterfaceType},
		}
		ok, err := match(p.filters(), attrs, nil)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
	}
	return struct {
		ENIs *items[xmlENI] `xml:"networkInterfaceSet"`
	}{itemsOf(out)}, nil
}

// ---- VPC, subnets, zones

type xmlVpc struct {
	VpcID     string         `xml:"vpcId"`
	State     string         `xml:"state"`
	CidrBlock string         `xml:"cidrBlock"`
	OwnerID   string         `xml:"ownerId"`
	IsDefault bool           `xml:"isDefault"`
	Tags      *items[xmlTag] `xml:"tagSet"`
}

func (s *state) describeVpcs(p *params) (any, *apiError) {
	ids := p.strs("VpcId")
	if len(ids) > 0 && !slices.Contains(ids, s.vpcID) {
		return nil, errCode("InvalidVpcID.NotFound", "The vpc ID '%s' does not exist", ids[0])
	}
	ok, err := match(p.filters(), map[string][]string{"vpc-id": {s.vpcID}, "cidr": {s.vpcCIDR.String()}, "state": {"available"}}, nil)
	if err != nil {
		return nil, err
	}
	var out []xmlVpc
	if ok {
		out = append(out, xmlVpc{VpcID: s.vpcID, State: "available", CidrBlock: s.vpcCIDR.String(), OwnerID: s.account})
	}
	return struct {
		Vpcs *items[xmlVpc] `xml:"vpcSet"`
	}{itemsOf(out)}, nil
}

type xmlSubnet struct {
	SubnetID            string         `xml:"subnetId"`
	State               string         `xml:"state"`
	VpcID               string         `xml:"vpcId"`
	CidrBlock           string         `xml:"cidrBlock"`
	AvailabilityZone    string         `xml:"availabilityZone"`
	AvailabilityZoneID  string         `xml:"availabilityZoneId"`
	AvailableIPCount    int32          `xml:"availableIpAddressCount"`
	MapPublicIPOnLaunch bool           `xml:"mapPublicIpOnLaunch"`
	OwnerID             string         `xml:"ownerId"`
	Tags                *items[xmlTag] `xml:"tagSet"`
}

func (s *state) zoneID(name string) string {
	for _, z := range s.zones {
		if z.name == name {
			return z.id
		}
	}
	return ""
}

func (s *state) describeSubnets(p *params) (any, *apiError) {
	ids := p.strs("SubnetId")
	for _, id := range ids {
		if s.subnets[id] == nil {
			return nil, errCode("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
	}
	var out []xmlSubnet
	for _, z := range s.zones {
		sn := s.subnets[z.subnet]
		if len(ids) > 0 && !slices.Contains(ids, sn.id) {
			continue
		}
		attrs := map[string][]string{
			"subnet-id": {sn.id}, "vpc-id": {s.vpcID}, "availability-zone": {sn.zone},
			"availability-zone-id": {z.id}, "cidr-block": {sn.cidr.String()}, "state": {"available"},
		}
		ok, err := match(p.filters(), attrs, sn.tags)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, xmlSubnet{
				SubnetID: sn.id, State: "available", VpcID: s.vpcID, CidrBlock: sn.cidr.String(),
				AvailabilityZone: sn.zone, AvailabilityZoneID: z.id, AvailableIPCount: 250,
				MapPublicIPOnLaunch: true, OwnerID: s.account, Tags: xmlTags(sn.tags),
			})
		}
	}
	return struct {
		Subnets *items[xmlSubnet] `xml:"subnetSet"`
	}{itemsOf(out)}, nil
}

type xmlZone struct {
	ZoneName           string `xml:"zoneName"`
	ZoneID             string `xml:"zoneId"`
	ZoneState          string `xml:"zoneState"`
	RegionName         string `xml:"regionName"`
	ZoneType           string `xml:"zoneType"`
	GroupName          string `xml:"groupName"`
	NetworkBorderGroup string `xml:"networkBorderGroup"`
	OptInStatus        string `xml:"optInStatus"`
}

func (s *state) describeZones(p *params) (any, *apiError) {
	names, ids := p.strs("ZoneName"), p.strs("ZoneId")
	var out []xmlZone
	for _, z := range s.zones {
		if len(names) > 0 && !slices.Contains(names, z.name) || len(ids) > 0 && !slices.Contains(ids, z.id) {
			continue
		}
		attrs := map[string][]string{
			"zone-name": {z.name}, "zone-id": {z.id}, "region-name": {s.region},
			"zone-type": {"availability-zone"}, "state": {"available"}, "group-name": {s.region},
		}
		ok, err := match(p.filters(), attrs, nil)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, xmlZone{
				ZoneName: z.name, ZoneID: z.id, ZoneState: "available", RegionName: s.region,
				ZoneType: "availability-zone", GroupName: s.region, NetworkBorderGroup: s.region,
				OptInStatus: "opt-in-not-required",
			})
		}
	}
	return struct {
		Zones *items[xmlZone] `xml:"availabilityZoneInfo"`
	}{itemsOf(out)}, nil
}

// ---- tags

// tagged finds the tags of the resource with the given ID, by its prefix.
func (s *state) tagged(id string) (*tags, *apiError) {
	switch {
	case s.instances[id] != nil:
		return &s.instances[id].tags, nil
	case s.groups[id] != nil:
		return &s.groups[id].tags, nil
	case s.subnets[id] != nil:
		return &s.subnets[id].tags, nil
	case s.routeTables[id] != nil:
		return &s.routeTables[id].tags, nil
	}
	code := "InvalidID"
	switch {
	case strings.HasPrefix(id, "i-"):
		code = "InvalidInstanceID.NotFound"
	case strings.HasPrefix(id, "sg-"):
		code = "InvalidGroup.NotFound"
	case strings.HasPrefix(id, "subnet-"):
		code = "InvalidSubnetID.NotFound"
	case strings.HasPrefix(id, "rtb-"):
		code = "InvalidRouteTableID.NotFound"
	}
	return nil, errCode(code, "The ID '%s' does not exist", id)
}

func (s *state) createTags(p *params) (any, *apiError) {
	for _, id := range p.strs("ResourceId") {
		t, err := s.tagged(id)
		if err != nil {
			return nil, err
		}
		*t = t.set(p.tags("Tag"))
	}
	return returnTrue{true}, nil
}

func (s *state) deleteTags(p *params) (any, *apiError) {
	for _, id := range p.strs("ResourceId") {
		t, err := s.tagged(id)
		if err != nil {
			return nil, err
		}
		*t = t.remove(p.tags("Tag"))
	}
	return returnTrue{true}, nil
}

// ---- route tables

type xmlRoute struct {
	DestinationCidrBlock     string `xml:"destinationCidrBlock,omitempty"`
	DestinationIpv6CidrBlock string `xml:"destinationIpv6CidrBlock,omitempty"`
	GatewayID                string `xml:"gatewayId,omitempty"`
	InstanceID               string `xml:"instanceId,omitempty"`
	InstanceOwnerID          string `xml:"instanceOwnerId,omitempty"`
	NetworkInterfaceID       string `xml:"networkInterfaceId,omitempty"`
	State                    string `xml:"state"`
	Origin                   string `xml:"origin"`
}

type xmlAssociation struct {
	RouteTableAssociationID string `xml:"routeTableAssociationId"`
	RouteTableID            string `xml:"routeTableId"`
	Main                    bool   `xml:"main"`
	State                   string `xml:"associationState>state"`
}

type xmlRouteTable struct {
	RouteTableID string                 `xml:"routeTableId"`
	VpcID        string                 `xml:"vpcId"`
	OwnerID      string                 `xml:"ownerId"`
	Routes       *items[xmlRoute]       `xml:"routeSet"`
	Associations *items[xmlAssociation] `xml:"associationSet"`
	Tags         *items[xmlTag]         `xml:"tagSet"`
}

func (s *state) xmlRoute(r route) xmlRoute {
	x := xmlRoute{GatewayID: r.gateway, InstanceID: r.instanceID, NetworkInterfaceID: r.eni, State: "active", Origin: "CreateRoute"}
	if r.gateway == "local" {
		x.Origin = "CreateRouteTable"
	}
	if r.instanceID != "" {
		x.InstanceOwnerID = s.account
		if in := s.instances[r.instanceID]; in == nil || in.state == "terminated" {
			x.State = "blackhole"
		}
	}
	if pfx, err := netip.ParsePrefix(r.destination); err == nil && pfx.Addr().Is6() {
		x.DestinationIpv6CidrBlock = r.destination
	} else {
		x.DestinationCidrBlock = r.destination
	}
	return x
}

func (s *state) describeRouteTables(p *params) (any, *apiError) {
	ids := p.strs("RouteTableId")
	var out []xmlRouteTable
	for _, id := range sortedKeys(s.routeTables) {
		rt := s.routeTables[id]
		if len(ids) > 0 && !slices.Contains(ids, id) {
			continue
		}
		attrs := map[string][]string{"route-table-id": {id}, "vpc-id": {s.vpcID}, "association.main": {"true"}}
		ok, err := match(p.filters(), attrs, rt.tags)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		var routes []xmlRoute
		for _, r := range rt.routes {
			routes = append(routes, s.xmlRoute(r))
		}
		out = append(out, xmlRouteTable{
			RouteTableID: id, VpcID: s.vpcID, OwnerID: s.account, Routes: itemsOf(routes), Tags: xmlTags(rt.tags),
			Associations: itemsOf([]xmlAssociation{{RouteTableAssociationID: "rtbassoc-" + strings.TrimPrefix(id, "rtb-"), RouteTableID: id, Main: true, State: "associated"}}),
		})
	}
	return struct {
		RouteTables *items[xmlRouteTable] `xml:"routeTableSet"`
	}{itemsOf(out)}, nil
}

func (s *state) createRoute(p *params) (any, *apiError) {
	rt := s.routeTables[p.str("RouteTableId")]
	if rt == nil {
		return nil, errCode("InvalidRouteTableID.NotFound", "The routeTable ID '%s' does not exist", p.str("RouteTableId"))
	}
	dest, aerr := routeDestination(p)
	if aerr != nil {
		return nil, aerr
	}
	r := route{destination: dest, instanceID: p.str("InstanceId"), eni: p.str("NetworkInterfaceId"), gateway: p.str("GatewayId")}
	if r.instanceID != "" {
		in := s.instances[r.instanceID]
		if in == nil || in.state == "terminated" {
			return nil, errCode("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", r.instanceID)
		}
		r.eni = s.eniID(in)
	}
	if r.instanceID == "" && r.eni == "" && r.gateway == "" {
		return nil, errCode("MissingParameter", "The request must contain a target: InstanceId, NetworkInterfaceId or GatewayId")
	}
	for _, old := range rt.routes {
		if old.destination == dest {
			return nil, errCode("RouteAlreadyExists", "The route identified by %s already exists.", dest)
		}
	}
	rt.routes = append(rt.routes, r)
	return returnTrue{true}, nil
}

func (s *state) deleteRoute(p *params) (any, *apiError) {
	rt := s.routeTables[p.str("RouteTableId")]
	if rt == nil {
		return nil, errCode("InvalidRouteTableID.NotFound", "The routeTable ID '%s' does not exist", p.str("RouteTableId"))
	}
	dest, aerr := routeDestination(p)
	if aerr != nil {
		return nil, aerr
	}
	i := slices.IndexFunc(rt.routes, func(r route) bool { return r.destination == dest && r.gateway != "local" })
	if i < 0 {
		return nil, errCode("InvalidRoute.NotFound", "no route with destination-cidr-block %s in route table %s", dest, rt.id)
	}
	rt.routes = slices.Delete(rt.routes, i, i+1)
	return struct{}{}, nil
}

// routeDestination reads a route's destination as EC2 does: an IPv4
// network in DestinationCidrBlock, an IPv6 one in DestinationIpv6CidrBlock;
// an IPv6 network in DestinationCidrBlock is refused.
func routeDestination(p *params) (string, *apiError) {
	v4, v6 := p.str("DestinationCidrBlock"), p.str("DestinationIpv6CidrBlock")
	switch {
	case v4 != "" && v6 != "":
		return "", errCode("InvalidParameterCombination", "give one of destinationCidrBlock and destinationIpv6CidrBlock")
	case v4 != "":
		pfx, err := netip.ParsePrefix(v4)
		if err != nil || !pfx.Addr().Is4() {
			return "", errCode("InvalidParameterValue", "Value (%s) for parameter destinationCidrBlock is invalid. This is not a valid IPv4 CIDR block.", v4)
		}
		return pfx.Masked().String(), nil
	case v6 != "":
		pfx, err := netip.ParsePrefix(v6)
		if err != nil || !pfx.Addr().Is6() || pfx.Addr().Is4In6() {
			return "", errCode("InvalidParameterValue", "Value (%s) for parameter destinationIpv6CidrBlock is invalid. This is not a valid IPv6 CIDR block.", v6)
		}
		return pfx.Masked().String(), nil
	}
	return "", errCode("MissingParameter", "The request must contain the parameter destinationCidrBlock or destinationIpv6CidrBlock")
}

// ---- security groups

type xmlIPRange struct {
	CidrIP      string `xml:"cidrIp"`
	Description string `xml:"description,omitempty"`
}

type xmlIPv6Range struct {
	CidrIPv6    string `xml:"cidrIpv6"`
	Description string `xml:"description,omitempty"`
}

type xmlPair struct {
	GroupID     string `xml:"groupId"`
	UserID      string `xml:"userId"`
	Description string `xml:"description,omitempty"`
}

type xmlPermission struct {
	IPProtocol string               `xml:"ipProtocol"`
	FromPort   *int32               `xml:"fromPort,omitempty"`
	ToPort     *int32               `xml:"toPort,omitempty"`
	Groups     *items[xmlPair]      `xml:"groups"`
	IPRanges   *items[xmlIPRange]   `xml:"ipRanges"`
	IPv6Ranges *items[xmlIPv6Range] `xml:"ipv6Ranges"`
}

type xmlSecurityGroup struct {
	OwnerID          string                `xml:"ownerId"`
	GroupID          string                `xml:"groupId"`
	GroupName        string                `xml:"groupName"`
	GroupDescription string                `xml:"groupDescription"`
	VpcID            string                `xml:"vpcId"`
	IPPermissions    *items[xmlPermission] `xml:"ipPermissions"`
	Egress           *items[xmlPermission] `xml:"ipPermissionsEgress"`
	Tags             *items[xmlTag]        `xml:"tagSet"`
}

// xmlPermissions groups the rules as EC2 answers them: one IpPermission per
// protocol and port range, its sources listed inside.
func (s *state) xmlPermissions(ps []permission) *items[xmlPermission] {
	var out []xmlPermission
	index := map[string]int{}
	for _, p := range ps {
		k := p.protocol + "|" + strconv.Itoa(int(p.from)) + "|" + strconv.Itoa(int(p.to))
		i, ok := index[k]
		if !ok {
			x := xmlPermission{IPProtocol: p.protocol}
			if p.protocol != "-1" {
				from, to := p.from, p.to
				x.FromPort, x.ToPort = &from, &to
			}
			out = append(out, x)
			i = len(out) - 1
			index[k] = i
		}
		x := &out[i]
		switch {
		case p.cidr != "":
			if x.IPRanges == nil {
				x.IPRanges = &items[xmlIPRange]{}
			}
			x.IPRanges.Items = append(x.IPRanges.Items, xmlIPRange{p.cidr, p.description})
		case p.cidr6 != "":
			if x.IPv6Ranges == nil {
				x.IPv6Ranges = &items[xmlIPv6Range]{}
			}
			x.IPv6Ranges.Items = append(x.IPv6Ranges.Items, xmlIPv6Range{p.cidr6, p.description})
		case p.group != "":
			if x.Groups == nil {
				x.Groups = &items[xmlPair]{}
			}
			x.Groups.Items = append(x.Groups.Items, xmlPair{GroupID: p.group, UserID: s.account, Description: p.description})
		}
	}
	return itemsOf(out)
}

func (s *state) describeSecurityGroups(p *params) (any, *apiError) {
	ids, names := p.strs("GroupId"), p.strs("GroupName")
	for _, id := range ids {
		if s.groups[id] == nil {
			return nil, errCode("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
	}
	var out []xmlSecurityGroup
	for _, id := range sortedKeys(s.groups) {
		g := s.groups[id]
		if len(ids) > 0 && !slices.Contains(ids, id) || len(names) > 0 && !slices.Contains(names, g.name) {
			continue
		}
		attrs := map[string][]string{"group-id": {id}, "group-name": {g.name}, "vpc-id": {s.vpcID}, "description": {g.description}, "owner-id": {s.account},
			"ip-permission.protocol": nil, "ip-permission.from-port": nil, "ip-permission.to-port": nil,
			"ip-permission.group-id": nil, "ip-permission.cidr": nil, "ip-permission.ipv6-cidr": nil}
		for _, pm := range g.ingress {
			attrs["ip-permission.protocol"] = append(attrs["ip-permission.protocol"], pm.protocol)
			attrs["ip-permission.from-port"] = append(attrs["ip-permission.from-port"], strconv.Itoa(int(pm.from)))
			attrs["ip-permission.to-port"] = append(attrs["ip-permission.to-port"], strconv.Itoa(int(pm.to)))
			switch {
			case pm.group != "":
				attrs["ip-permission.group-id"] = append(attrs["ip-permission.group-id"], pm.group)
			case pm.cidr != "":
				attrs["ip-permission.cidr"] = append(attrs["ip-permission.cidr"], pm.cidr)
			case pm.cidr6 != "":
				attrs["ip-permission.ipv6-cidr"] = append(attrs["ip-permission.ipv6-cidr"], pm.cidr6)
			}
		}
		ok, err := match(p.filters(), attrs, g.tags)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, xmlSecurityGroup{
				OwnerID: s.account, GroupID: id, GroupName: g.name, GroupDescription: g.description, VpcID: s.vpcID,
				IPPermissions: s.xmlPermissions(g.ingress),
				Egress:        s.xmlPermissions([]permission{{protocol: "-1", cidr: "0.0.0.0/0"}}),
				Tags:          xmlTags(g.tags),
			})
		}
	}
	return struct {
		Groups *items[xmlSecurityGroup] `xml:"securityGroupInfo"`
	}{itemsOf(out)}, nil
}

func (s *state) createSecurityGroup(p *params) (any, *apiError) {
	name := p.str("GroupName")
	if name == "" || p.str("GroupDescription") == "" {
		return nil, errCode("MissingParameter", "GroupName and GroupDescription are required")
	}
	if vpc := p.str("VpcId"); vpc != "" && vpc != s.vpcID {
		return nil, errCode("InvalidVpcID.NotFound", "The vpc ID '%s' does not exist", vpc)
	}
	for _, g := range s.groups {
		if g.name == name {
			return nil, errCode("InvalidGroup.Duplicate", "The security group '%s' already exists for VPC '%s'", name, s.vpcID)
		}
	}
	g := &securityGroup{id: s.newID("sg"), name: name, description: p.str("GroupDescription")}
	for _, spec := range p.list("TagSpecification") {
		g.tags = g.tags.set(spec.tags("Tag"))
	}
	s.groups[g.id] = g
	return struct {
		GroupID string         `xml:"groupId"`
		Tags    *items[xmlTag] `xml:"tagSet"`
	}{g.id, xmlTags(g.tags)}, nil
}

func (s *state) deleteSecurityGroup(p *params) (any, *apiError) {
	id := p.str("GroupId")
	g := s.groups[id]
	if g == nil {
		return nil, errCode("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	}
	for _, other := range s.groups {
		if slices.ContainsFunc(other.ingress, func(pm permission) bool { return pm.group == id }) {
			return nil, errCode("DependencyViolation", "resource %s has a dependent object (a rule of %s)", id, other.id)
		}
	}
	for _, lb := range s.elbs {
		if slices.Contains(lb.groups, id) {
			return nil, errCode("DependencyViolation", "resource %s has a dependent object (load balancer %s)", id, lb.name)
		}
	}
	for _, lb := range s.nlbs {
		if slices.Contains(lb.groups, id) {
			return nil, errCode("DependencyViolation", "resource %s has a dependent object (network load balancer %s)", id, lb.name)
		}
	}
	for _, in := range s.instances {
		if in.state != "terminated" && slices.Contains(in.groups, id) {
			return nil, errCode("DependencyViolation", "resource %s has a dependent object (instance %s)", id, in.id)
		}
	}
	delete(s.groups, id)
	return returnTrue{true}, nil
}

// permissions reads IpPermissions.N into one rule per source.
func permissions(p *params) ([]permission, *apiError) {
	var out []permission
	for _, ip := range p.list("IpPermissions") {
		base := permission{protocol: strings.ToLower(ip.str("IpProtocol")), from: ip.int32("FromPort"), to: ip.int32("ToPort")}
		switch base.protocol {
		case "6":
			base.protocol = "tcp"
		case "17":
			base.protocol = "udp"
		case "tcp", "udp", "icmp", "icmpv6", "-1":
		default:
			return nil, errCode("InvalidParameterValue", "Invalid value '%s' for IP protocol", base.protocol)
		}
		if base.protocol == "-1" {
			base.from, base.to = 0, 0
		}
		n := 0
		for _, r := range ip.list("IpRanges") {
			pm := base
			pm.cidr, pm.description = r.str("CidrIp"), r.str("Description")
			if _, err := netip.ParsePrefix(pm.cidr); err != nil {
				return nil, errCode("InvalidParameterValue", "CIDR block %s is malformed", pm.cidr)
			}
			out, n = append(out, pm), n+1
		}
		for _, r := range ip.list("Ipv6Ranges") {
			pm := base
			pm.cidr6, pm.description = r.str("CidrIpv6"), r.str("Description")
			if _, err := netip.ParsePrefix(pm.cidr6); err != nil {
				return nil, errCode("InvalidParameterValue", "CIDR block %s is malformed", pm.cidr6)
			}
			out, n = append(out, pm), n+1
		}
		for _, g := range ip.list("Groups") {
			pm := base
			pm.group, pm.description = g.str("GroupId"), g.str("Description")
			out, n = append(out, pm), n+1
		}
		if n == 0 {
			return nil, errCode("InvalidParameterValue", "an IpPermission needs a source: IpRanges, Ipv6Ranges or Groups")
		}
	}
	return out, nil
}

func (s *state) authorizeIngress(p *params) (any, *apiError) {
	g := s.groups[p.str("GroupId")]
	if g == nil {
		return nil, errCode("InvalidGroup.NotFound", "The security group '%s' does not exist", p.str("GroupId"))
	}
	add, err := permissions(p)
	if err != nil {
		return nil, err
	}
	for _, pm := range add {
		if pm.group != "" && s.groups[pm.group] == nil {
			return nil, errCode("InvalidGroup.NotFound", "The security group '%s' does not exist", pm.group)
		}
		if slices.ContainsFunc(g.ingress, func(old permission) bool { return old.key() == pm.key() }) {
			return nil, errCode("InvalidPermission.Duplicate", "the specified rule already exists in %s", g.id)
		}
	}
	g.ingress = append(g.ingress, add...)
	return returnTrue{true}, nil
}

func (s *state) revokeIngress(p *params) (any, *apiError) {
	g := s.groups[p.str("GroupId")]
	if g == nil {
		return nil, errCode("InvalidGroup.NotFound", "The security group '%s' does not exist", p.str("GroupId"))
	}
	del, err := permissions(p)
	if err != nil {
		return nil, err
	}
	for _, pm := range del {
		i := slices.IndexFunc(g.ingress, func(old permission) bool { return old.key() == pm.key() })
		if i < 0 {
			return nil, errCode("InvalidPermission.NotFound", "The specified rule does not exist in this security group.")
		}
		g.ingress = slices.Delete(g.ingress, i, i+1)
	}
	return returnTrue{true}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

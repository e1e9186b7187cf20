// Package driversdk is the cloud-driver protocol v1 of ccm-conformance
// (docs/cloud-driver.md) for drivers written in Go: the protocol's objects,
// requests and responses; Main, which runs one verb the way the harness
// calls a driver; the protocol's JSON Schema (schema/v1.json), for drivers in
// other languages; and, in package fakecloud, an in-memory cloud that
// answers every verb, for drivers' and clients' unit tests.
//
// It is a module of its own and imports only the standard library, so a
// driver that imports it takes nothing of the harness's module graph. The
// harness's client (framework/clouddriver) and validate-driver use the
// same types, so the two ends of the protocol cannot drift.
//
// Floor: the driver SDK, a module of its own: the standard library only, so
// a provider's driver can import it without the harness.
package driversdk

import (
	"strings"
	"time"
)

// ProtocolVersion is the cloud-driver protocol this harness speaks.
const ProtocolVersion = "v1"

// Verb is one operation of the protocol, as the words passed to the driver.
type Verb string

// The verbs of protocol v1 (docs/cloud-driver.md).
const (
	VerbInfo                 Verb = "info"
	VerbInstancesList        Verb = "instances list"
	VerbInstanceGet          Verb = "instance get"
	VerbInstanceCreate       Verb = "instance create"
	VerbInstanceDelete       Verb = "instance delete"
	VerbInstanceStop         Verb = "instance stop"
	VerbInstanceStart        Verb = "instance start"
	VerbInstanceSetAddresses Verb = "instance set-addresses"
	VerbLoadBalancerGet      Verb = "loadbalancer get"
	VerbLoadBalancersList    Verb = "loadbalancers list"
	VerbRoutesList           Verb = "routes list"
	VerbRouteCreate          Verb = "route create"
	VerbRouteDelete          Verb = "route delete"
	VerbFaultInject          Verb = "fault inject"
	VerbFaultClear           Verb = "fault clear"
	VerbCallsList            Verb = "calls list"
)

// SimulatorOnly reports whether only a driver over a simulated cloud can
// implement the verb: no real cloud's API lets a caller make it fail on
// purpose or rewrite an instance's addresses (docs/cloud-driver.md,
// "Simulator-only verbs, and why").
func (v Verb) SimulatorOnly() bool {
	switch v {
	case VerbInstanceSetAddresses, VerbFaultInject, VerbFaultClear:
		return true
	}
	return false
}

// Fault targets for VerbFaultInject.
const (
	FaultTargetInstances     = "instances"
	FaultTargetLoadBalancers = "loadbalancers"
	FaultTargetRoutes        = "routes"
)

// Operations of the cloud's call log (VerbCallsList) that change load
// balancers or routes, named after the cloudprovider method that makes them.
// A driver may list other calls under names of its own choosing.
const (
	// OpEnsureLoadBalancer creates or changes a load balancer
	// (EnsureLoadBalancer or UpdateLoadBalancer).
	OpEnsureLoadBalancer = "EnsureLoadBalancer"
	// OpEnsureLoadBalancerDeleted deletes a load balancer.
	OpEnsureLoadBalancerDeleted = "EnsureLoadBalancerDeleted"
	// OpCreateRoute creates a route.
	OpCreateRoute = "CreateRoute"
	// OpDeleteRoute deletes a route.
	OpDeleteRoute = "DeleteRoute"
)

// Call is one call the CCM made to the cloud's API, as the cloud logged it.
type Call struct {
	// Seq orders the calls: a later call has a larger Seq.
	Seq int64 `json:"seq"`
	// Time is when the cloud answered, by the cloud's clock.
	Time time.Time `json:"time"`
	// Operation is one of the Op constants, or a name of the driver's.
	Operation string `json:"operation"`
	// Caller tells one CCM process from another; it is opaque.
	Caller string `json:"caller"`
	// Resource names what the call was about (an instance's name, a load
	// balancer's), when the driver knows it; optional.
	Resource string `json:"resource,omitempty"`
	// Error is the error the cloud answered with, empty on success.
	Error string `json:"error,omitempty"`
}

// Info is the driver's answer to the handshake.
type Info struct {
	ProtocolVersion string `json:"protocolVersion"`
	Provider        string `json:"provider"`
	Verbs           []Verb `json:"verbs"`
}

// Address is one address of an instance; Type is a Kubernetes
// NodeAddressType name.
type Address struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// Instance is a machine as the cloud reports it.
type Instance struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	ProviderID   string    `json:"providerID"`
	Zone         string    `json:"zone"`
	Region       string    `json:"region"`
	InstanceType string    `json:"instanceType"`
	State        string    `json:"state"`
	Addresses    []Address `json:"addresses"`
}

// Instance states.
const (
	StateRunning = "running"
	StateStopped = "stopped"
)

// CreateInstanceRequest asks for a new running instance.
type CreateInstanceRequest struct {
	Name         string   `json:"name"`
	Zone         string   `json:"zone,omitempty"`
	InstanceType string   `json:"instanceType,omitempty"`
	IPFamilies   []string `json:"ipFamilies,omitempty"`
}

// ServiceRef names the Service whose load balancer is asked for.
type ServiceRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// Ingress is one address a load balancer serves on.
type Ingress struct {
	IP       string `json:"ip,omitempty"`
	Hostname string `json:"hostname,omitempty"`
}

// Port is one listener of a load balancer.
type Port struct {
	Protocol string `json:"protocol"`
	Port     int32  `json:"port"`
	NodePort int32  `json:"nodePort"`
}

// LoadBalancer is the cloud's view of a Service's load balancer.
type LoadBalancer struct {
	Exists              bool      `json:"exists"`
	Name                string    `json:"name,omitempty"`
	Ingress             []Ingress `json:"ingress,omitempty"`
	Ports               []Port    `json:"ports,omitempty"`
	Backends            []string  `json:"backends,omitempty"`
	SourceRanges        []string  `json:"sourceRanges,omitempty"`
	HealthCheckNodePort int32     `json:"healthCheckNodePort,omitempty"`
	// ServiceNamespace and ServiceName name the Service the load balancer
	// was made for, where the cloud records it (loadbalancers list);
	// optional.
	ServiceNamespace string `json:"serviceNamespace,omitempty"`
	ServiceName      string `json:"serviceName,omitempty"`
}

// Route is a cloud route to a node.
type Route struct {
	Name            string `json:"name"`
	NodeName        string `json:"nodeName"`
	DestinationCIDR string `json:"destinationCIDR"`
}

// The requests and responses of the verbs, as the table of
// docs/cloud-driver.md gives them. A verb whose request or response is {}
// takes or gives Empty.

// Empty is the {} of verbs that take or give nothing.
type Empty struct{}

// NameRequest names an instance (instance get, delete, stop, start) or a
// route (route delete).
type NameRequest struct {
	Name string `json:"name"`
}

// SetAddressesRequest is instance set-addresses' request.
type SetAddressesRequest struct {
	Name      string    `json:"name"`
	Addresses []Address `json:"addresses"`
}

// RouteCreateRequest is route create's request.
type RouteCreateRequest struct {
	NodeName        string `json:"nodeName"`
	DestinationCIDR string `json:"destinationCIDR"`
}

// FaultInjectRequest is fault inject's request.
type FaultInjectRequest struct {
	Target    string  `json:"target"`
	ErrorRate float64 `json:"errorRate"`
}

// CallsListRequest is calls list's request; both fields are optional.
type CallsListRequest struct {
	// After leaves out calls with Seq <= After.
	After int64 `json:"after"`
	// Operations, when given, keeps only calls of these operations.
	Operations []string `json:"operations,omitempty"`
}

// InstanceResponse answers instance get, create and set-addresses.
type InstanceResponse struct {
	Instance Instance `json:"instance"`
}

// InstancesResponse answers instances list.
type InstancesResponse struct {
	Instances []Instance `json:"instances"`
}

// LoadBalancerResponse answers loadbalancer get (the request is a
// ServiceRef).
type LoadBalancerResponse struct {
	LoadBalancer LoadBalancer `json:"loadBalancer"`
}

// LoadBalancersResponse answers loadbalancers list.
type LoadBalancersResponse struct {
	LoadBalancers []LoadBalancer `json:"loadBalancers"`
}

// RoutesResponse answers routes list.
type RoutesResponse struct {
	Routes []Route `json:"routes"`
}

// RouteResponse answers route create.
type RouteResponse struct {
	Route Route `json:"route"`
}

// CallsResponse answers calls list.
type CallsResponse struct {
	Calls []Call `json:"calls"`
	// Last is the Seq of the newest call the cloud has logged, which a
	// later calls list can pass as After.
	Last int64 `json:"last"`
}

// Message pairs a verb with the Go types of its request and response, as
// zero values: what a client sends and a driver answers.
type Message struct {
	Verb              Verb
	Request, Response any
}

// Messages has one Message per verb, in AllVerbs' order. The schema's
// tests check each against schema/v1.json.
var Messages = []Message{
	{VerbInfo, Empty{}, Info{}},
	{VerbInstancesList, Empty{}, InstancesResponse{}},
	{VerbInstanceGet, NameRequest{}, InstanceResponse{}},
	{VerbInstanceCreate, CreateInstanceRequest{}, InstanceResponse{}},
	{VerbInstanceDelete, NameRequest{}, Empty{}},
	{VerbInstanceStop, NameRequest{}, Empty{}},
	{VerbInstanceStart, NameRequest{}, Empty{}},
	{VerbInstanceSetAddresses, SetAddressesRequest{}, InstanceResponse{}},
	{VerbLoadBalancerGet, ServiceRef{}, LoadBalancerResponse{}},
	{VerbLoadBalancersList, Empty{}, LoadBalancersResponse{}},
	{VerbRoutesList, Empty{}, RoutesResponse{}},
	{VerbRouteCreate, RouteCreateRequest{}, RouteResponse{}},
	{VerbRouteDelete, NameRequest{}, Empty{}},
	{VerbFaultInject, FaultInjectRequest{}, Empty{}},
	{VerbFaultClear, Empty{}, Empty{}},
	{VerbCallsList, CallsListRequest{}, CallsResponse{}},
}

// SchemaName is the name of a verb's request or response in the schema's
// $defs: "request.instance-get", "response.instance-get".
func SchemaName(kind string, v Verb) string {
	return kind + "." + strings.ReplaceAll(string(v), " ", "-")
}

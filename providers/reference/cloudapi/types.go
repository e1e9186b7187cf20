// Package cloudapi is the reference provider's simulated cloud: an in-memory
// IaaS with instances, load balancers that really forward traffic on loopback
// addresses, and routes, served as JSON over HTTP under /v1. It also holds the
// small typed client that the reference CCM and the reference cloud driver use.
//
// The simulator exists so that the conformance suites can run against a CCM
// that talks to a "cloud" over the network, exactly as a real provider's CCM
// does, while the suites still see real effects (a Service's ingress IP
// answers connections). For the harness's own tests it records every call
// and can inject faults.
//
// Floor: a provider. Like a provider's own repository, it links no package
// of this repository outside providers/, the driver SDK included: its
// module (providers/go.mod) requires neither, and testsupport/floors
// checks it package by package.
package cloudapi

import "time"

// Instance states.
const (
	StateRunning = "running"
	StateStopped = "stopped"
)

// Address types: the names of Kubernetes' NodeAddressType values.
const (
	AddressInternalIP  = "InternalIP"
	AddressExternalIP  = "ExternalIP"
	AddressHostname    = "Hostname"
	AddressInternalDNS = "InternalDNS"
	AddressExternalDNS = "ExternalDNS"
)

// IP families an instance can be created with.
const (
	IPv4 = "IPv4"
	IPv6 = "IPv6"
)

// Load balancer port protocols.
const (
	ProtocolTCP = "TCP"
	ProtocolUDP = "UDP"
)

// CallerHeader names the HTTP header that identifies the caller in the call
// log. The reference CCM sets it to its --reference-identity.
const CallerHeader = "X-Reference-Caller"

// Address is one address of an instance.
type Address struct {
	// Type is a Kubernetes NodeAddressType name, such as InternalIP.
	Type string `json:"type"`
	// Address is an IP address or, for the DNS and Hostname types, a name.
	Address string `json:"address"`
}

// Instance is a virtual machine of the simulated cloud.
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

// CreateInstanceRequest is the body of POST /v1/instances. Every field but
// Name is optional.
type CreateInstanceRequest struct {
	Name         string `json:"name"`
	Zone         string `json:"zone,omitempty"`
	InstanceType string `json:"instanceType,omitempty"`
	// IPFamilies selects which address families the instance gets, in
	// order; the default is [IPv4].
	IPFamilies []string `json:"ipFamilies,omitempty"`
}

// SetAddressesRequest is the body of PUT /v1/instances/{id}/addresses.
type SetAddressesRequest struct {
	Addresses []Address `json:"addresses"`
}

// InstanceList is the answer of GET /v1/instances.
type InstanceList struct {
	Instances []Instance `json:"instances"`
}

// Port is one listener of a load balancer.
type Port struct {
	// Protocol is TCP or UDP.
	Protocol string `json:"protocol"`
	// Port is the port the load balancer listens on at its ingress IP.
	Port int32 `json:"port"`
	// NodePort is the port on the backends' InternalIP that traffic is
	// forwarded to; 0 means there is nothing to forward to.
	NodePort int32 `json:"nodePort"`
}

// LoadBalancerSpec is the body of PUT /v1/loadbalancers/{name}: everything
// the caller decides about a load balancer.
type LoadBalancerSpec struct {
	// ServiceNamespace and ServiceName record which Kubernetes Service the
	// load balancer was made for; the cloud only stores them.
	ServiceNamespace string `json:"serviceNamespace,omitempty"`
	ServiceName      string `json:"serviceName,omitempty"`
	Ports            []Port `json:"ports"`
	// Backends are instance (node) names.
	Backends []string `json:"backends"`
	// SourceRanges are the client CIDRs allowed in; empty allows all.
	SourceRanges []string `json:"sourceRanges"`
	// HealthCheckNodePort, when not 0, makes the cloud forward only to
	// backends whose http://<InternalIP>:<port>/healthz answers 200.
	HealthCheckNodePort int32 `json:"healthCheckNodePort"`
	// SessionAffinity ClientIP sends every connection of a client address
	// to the same backend while that backend stays eligible; "" (None)
	// spreads a client's connections over the backends.
	SessionAffinity string `json:"sessionAffinity,omitempty"`
}

// SessionAffinityClientIP is LoadBalancerSpec.SessionAffinity's one value.
const SessionAffinityClientIP = "ClientIP"

// LoadBalancer is a load balancer of the simulated cloud.
type LoadBalancer struct {
	Name string `json:"name"`
	LoadBalancerSpec
	// IngressIP is assigned by the cloud on creation and kept for the
	// load balancer's lifetime.
	IngressIP string `json:"ingressIP"`
}

// LoadBalancerList is the answer of GET /v1/loadbalancers.
type LoadBalancerList struct {
	LoadBalancers []LoadBalancer `json:"loadBalancers"`
}

// Route sends a destination CIDR to a node.
type Route struct {
	Name            string `json:"name"`
	NodeName        string `json:"nodeName"`
	DestinationCIDR string `json:"destinationCIDR"`
}

// CreateRouteRequest is the body of POST /v1/routes; the cloud picks a name
// when Name is empty.
type CreateRouteRequest struct {
	Name            string `json:"name,omitempty"`
	NodeName        string `json:"nodeName"`
	DestinationCIDR string `json:"destinationCIDR"`
}

// RouteList is the answer of GET /v1/routes.
type RouteList struct {
	Routes []Route `json:"routes"`
}

// Call is one entry of the call log.
type Call struct {
	// Seq numbers calls from 1 in the order they were answered.
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
	// Operation names the API operation, such as instance.get.
	Operation string `json:"operation"`
	// Caller is the X-Reference-Caller header of the request.
	Caller string `json:"caller"`
	// Resource names what the call was about: an instance's name (also
	// for a call that gave its ID), a load balancer's or route's name, or
	// the name a list asked for; empty for a plain list.
	Resource string `json:"resource,omitempty"`
	// Error is the error the call answered with, empty on success.
	Error string `json:"error,omitempty"`
}

// CallList is the answer of GET /v1/calls.
type CallList struct {
	Calls []Call `json:"calls"`
}

// Fault makes calls of an operation fail or slow down.
type Fault struct {
	// Operation is an operation name as in the call log, or "*" for all.
	Operation string `json:"operation"`
	// FailTimes makes the next FailTimes matching calls fail with 500.
	FailTimes int `json:"failTimes,omitempty"`
	// ErrorRate (0..1) makes each matching call fail with that
	// probability, after FailTimes is used up.
	ErrorRate float64 `json:"errorRate,omitempty"`
	// Latency is a Go duration (such as "250ms") added before answering.
	Latency string `json:"latency,omitempty"`
	// ExceptCaller exempts calls from this caller (X-Reference-Caller),
	// so that a test's own calls keep working while the CCM's fail.
	ExceptCaller string `json:"exceptCaller,omitempty"`
}

// FaultList is the answer of GET /v1/faults.
type FaultList struct {
	Faults []Fault `json:"faults"`
}

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	Error string `json:"error"`
}

// Operation names, as they appear in the call log and in faults.
const (
	OpInstanceList         = "instance.list"
	OpInstanceGet          = "instance.get"
	OpInstanceCreate       = "instance.create"
	OpInstanceDelete       = "instance.delete"
	OpInstanceStop         = "instance.stop"
	OpInstanceStart        = "instance.start"
	OpInstanceSetAddresses = "instance.setAddresses"
	OpLoadBalancerList     = "loadbalancer.list"
	OpLoadBalancerGet      = "loadbalancer.get"
	OpLoadBalancerEnsure   = "loadbalancer.ensure"
	OpLoadBalancerDelete   = "loadbalancer.delete"
	OpRouteList            = "route.list"
	OpRouteCreate          = "route.create"
	OpRouteDelete          = "route.delete"
)

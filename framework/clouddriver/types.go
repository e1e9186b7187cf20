package clouddriver

import "time"

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

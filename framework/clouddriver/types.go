package clouddriver

import "github.com/ccm-conformance/ccm-conformance/driversdk"

// The protocol's types are the SDK's (driversdk, a module of its own that
// drivers import), so the harness's client, validate-driver and the
// drivers cannot drift apart. The names here keep the harness's code
// short.

// ProtocolVersion is the cloud-driver protocol this harness speaks.
const ProtocolVersion = driversdk.ProtocolVersion

type (
	Verb                  = driversdk.Verb
	Call                  = driversdk.Call
	Info                  = driversdk.Info
	Address               = driversdk.Address
	Instance              = driversdk.Instance
	CreateInstanceRequest = driversdk.CreateInstanceRequest
	ServiceRef            = driversdk.ServiceRef
	Ingress               = driversdk.Ingress
	Port                  = driversdk.Port
	LoadBalancer          = driversdk.LoadBalancer
	Route                 = driversdk.Route
)

// The verbs of protocol v1 (docs/cloud-driver.md).
const (
	VerbInfo                 = driversdk.VerbInfo
	VerbInstancesList        = driversdk.VerbInstancesList
	VerbInstanceGet          = driversdk.VerbInstanceGet
	VerbInstanceCreate       = driversdk.VerbInstanceCreate
	VerbInstanceDelete       = driversdk.VerbInstanceDelete
	VerbInstanceStop         = driversdk.VerbInstanceStop
	VerbInstanceStart        = driversdk.VerbInstanceStart
	VerbInstanceSetAddresses = driversdk.VerbInstanceSetAddresses
	VerbLoadBalancerGet      = driversdk.VerbLoadBalancerGet
	VerbLoadBalancersList    = driversdk.VerbLoadBalancersList
	VerbRoutesList           = driversdk.VerbRoutesList
	VerbRouteCreate          = driversdk.VerbRouteCreate
	VerbRouteDelete          = driversdk.VerbRouteDelete
	VerbFaultInject          = driversdk.VerbFaultInject
	VerbFaultClear           = driversdk.VerbFaultClear
	VerbCallsList            = driversdk.VerbCallsList
)

// Fault targets, call-log operations and instance states.
const (
	FaultTargetInstances        = driversdk.FaultTargetInstances
	FaultTargetLoadBalancers    = driversdk.FaultTargetLoadBalancers
	FaultTargetRoutes           = driversdk.FaultTargetRoutes
	OpEnsureLoadBalancer        = driversdk.OpEnsureLoadBalancer
	OpEnsureLoadBalancerDeleted = driversdk.OpEnsureLoadBalancerDeleted
	OpCreateRoute               = driversdk.OpCreateRoute
	OpDeleteRoute               = driversdk.OpDeleteRoute
	StateRunning                = driversdk.StateRunning
	StateStopped                = driversdk.StateStopped
)

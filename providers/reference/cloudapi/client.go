package cloudapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Client is a typed client of the cloud API.
type Client struct {
	base   string // scheme and host, such as http://reference-cloud
	caller string
	http   *http.Client
}

// NewClient returns a client of the cloud at endpoint (see ParseEndpoint).
// caller is sent as X-Reference-Caller on every request; it may be empty.
func NewClient(endpoint, caller string) (*Client, error) {
	network, address, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	base := "http://" + address
	if network == "unix" {
		base = "http://reference-cloud" // any host: the dialer ignores it
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	transport := &http.Transport{
		Proxy: nil, // the cloud is always local
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, address)
		},
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Client{base: base, caller: caller, http: &http.Client{Transport: transport, Timeout: 30 * time.Second}}, nil
}

// APIError is an error answer of the cloud API.
type APIError struct {
	Method     string
	Path       string
	StatusCode int
	Message    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("cloud API %s %s: %d %s: %s", e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// IsNotFound reports whether err is a 404 answer of the cloud API.
func IsNotFound(err error) bool {
	e, ok := errors.AsType[*APIError](err)
	return ok && e.StatusCode == http.StatusNotFound
}

// IsConflict reports whether err is a 409 answer of the cloud API.
func IsConflict(err error) bool {
	e, ok := errors.AsType[*APIError](err)
	return ok && e.StatusCode == http.StatusConflict
}

// do sends a request with an optional JSON body and decodes a JSON answer
// into out (when out is not nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("building %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.caller != "" {
		req.Header.Set(CallerHeader, c.caller)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cloud API %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("cloud API %s %s: reading answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var eb ErrorBody
		if json.Unmarshal(data, &eb) != nil || eb.Error == "" {
			eb.Error = string(bytes.TrimSpace(data))
		}
		return &APIError{Method: method, Path: path, StatusCode: resp.StatusCode, Message: eb.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("cloud API %s %s: decoding answer: %w", method, path, err)
	}
	return nil
}

// ListInstances returns every instance, oldest first.
func (c *Client) ListInstances(ctx context.Context) ([]Instance, error) {
	var list InstanceList
	err := c.do(ctx, http.MethodGet, "/v1/instances", nil, &list)
	return list.Instances, err
}

// InstanceByName returns the instance with the given name, or an error for
// which IsNotFound is true.
func (c *Client) InstanceByName(ctx context.Context, name string) (*Instance, error) {
	path := "/v1/instances?name=" + url.QueryEscape(name)
	var list InstanceList
	if err := c.do(ctx, http.MethodGet, path, nil, &list); err != nil {
		return nil, err
	}
	if len(list.Instances) == 0 {
		return nil, &APIError{Method: http.MethodGet, Path: path, StatusCode: http.StatusNotFound, Message: fmt.Sprintf("instance named %q not found", name)}
	}
	return &list.Instances[0], nil
}

// GetInstance returns the instance with the given ID.
func (c *Client) GetInstance(ctx context.Context, id string) (*Instance, error) {
	var in Instance
	if err := c.do(ctx, http.MethodGet, "/v1/instances/"+url.PathEscape(id), nil, &in); err != nil {
		return nil, err
	}
	return &in, nil
}

// CreateInstance creates a running instance.
func (c *Client) CreateInstance(ctx context.Context, req CreateInstanceRequest) (*Instance, error) {
	var in Instance
	if err := c.do(ctx, http.MethodPost, "/v1/instances", req, &in); err != nil {
		return nil, err
	}
	return &in, nil
}

// DeleteInstance deletes the instance with the given ID.
func (c *Client) DeleteInstance(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/instances/"+url.PathEscape(id), nil, nil)
}

// StopInstance stops the instance with the given ID; it keeps existing.
func (c *Client) StopInstance(ctx context.Context, id string) (*Instance, error) {
	return c.instanceAction(ctx, id, "stop")
}

// StartInstance starts the instance with the given ID.
func (c *Client) StartInstance(ctx context.Context, id string) (*Instance, error) {
	return c.instanceAction(ctx, id, "start")
}

func (c *Client) instanceAction(ctx context.Context, id, action string) (*Instance, error) {
	var in Instance
	if err := c.do(ctx, http.MethodPost, "/v1/instances/"+url.PathEscape(id)+"/"+action, nil, &in); err != nil {
		return nil, err
	}
	return &in, nil
}

// SetAddresses replaces the address list of the instance with the given ID.
func (c *Client) SetAddresses(ctx context.Context, id string, addrs []Address) (*Instance, error) {
	var in Instance
	if err := c.do(ctx, http.MethodPut, "/v1/instances/"+url.PathEscape(id)+"/addresses", SetAddressesRequest{Addresses: addrs}, &in); err != nil {
		return nil, err
	}
	return &in, nil
}

// ListLoadBalancers returns every load balancer, by name.
func (c *Client) ListLoadBalancers(ctx context.Context) ([]LoadBalancer, error) {
	var list LoadBalancerList
	err := c.do(ctx, http.MethodGet, "/v1/loadbalancers", nil, &list)
	return list.LoadBalancers, err
}

// GetLoadBalancer returns the load balancer with the given name.
func (c *Client) GetLoadBalancer(ctx context.Context, name string) (*LoadBalancer, error) {
	var lb LoadBalancer
	if err := c.do(ctx, http.MethodGet, "/v1/loadbalancers/"+url.PathEscape(name), nil, &lb); err != nil {
		return nil, err
	}
	return &lb, nil
}

// EnsureLoadBalancer creates or updates a load balancer.
func (c *Client) EnsureLoadBalancer(ctx context.Context, name string, spec LoadBalancerSpec) (*LoadBalancer, error) {
	var lb LoadBalancer
	if err := c.do(ctx, http.MethodPut, "/v1/loadbalancers/"+url.PathEscape(name), spec, &lb); err != nil {
		return nil, err
	}
	return &lb, nil
}

// UpdateLoadBalancer replaces the spec of a load balancer that exists; one
// that does not is a not-found error, never created.
func (c *Client) UpdateLoadBalancer(ctx context.Context, name string, spec LoadBalancerSpec) (*LoadBalancer, error) {
	var lb LoadBalancer
	if err := c.do(ctx, http.MethodPut, "/v1/loadbalancers/"+url.PathEscape(name)+"?existing=true", spec, &lb); err != nil {
		return nil, err
	}
	return &lb, nil
}

// DeleteLoadBalancer deletes the load balancer with the given name.
func (c *Client) DeleteLoadBalancer(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/loadbalancers/"+url.PathEscape(name), nil, nil)
}

// ListRoutes returns every route, oldest first.
func (c *Client) ListRoutes(ctx context.Context) ([]Route, error) {
	var list RouteList
	err := c.do(ctx, http.MethodGet, "/v1/routes", nil, &list)
	return list.Routes, err
}

// CreateRoute creates a route.
func (c *Client) CreateRoute(ctx context.Context, req CreateRouteRequest) (*Route, error) {
	var r Route
	if err := c.do(ctx, http.MethodPost, "/v1/routes", req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// DeleteRoute deletes the route with the given name.
func (c *Client) DeleteRoute(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/routes/"+url.PathEscape(name), nil, nil)
}

// Calls returns the calls logged after sequence number since.
func (c *Client) Calls(ctx context.Context, since int64) ([]Call, error) {
	var list CallList
	err := c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/calls?since=%d", since), nil, &list)
	return list.Calls, err
}

// AddFault installs a fault and returns every fault now installed.
func (c *Client) AddFault(ctx context.Context, f Fault) ([]Fault, error) {
	var list FaultList
	err := c.do(ctx, http.MethodPost, "/v1/faults", f, &list)
	return list.Faults, err
}

// Faults returns the installed faults.
func (c *Client) Faults(ctx context.Context) ([]Fault, error) {
	var list FaultList
	err := c.do(ctx, http.MethodGet, "/v1/faults", nil, &list)
	return list.Faults, err
}

// ClearFaults removes every fault.
func (c *Client) ClearFaults(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/v1/faults", nil, nil)
}

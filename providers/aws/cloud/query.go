package cloud

import (
	"encoding/xml"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// params is a Query-protocol request's form, read as a tree: the key
// "Filter.2.Value.1" is the path Filter → 2 → Value → 1. EC2 flattens its
// lists ("InstanceId.1"); Elastic Load Balancing wraps them in "member"
// ("Listeners.member.1.Protocol"). list reads both.
type params struct {
	value    string
	children map[string]*params
}

func parseParams(form url.Values) *params {
	root := &params{}
	for key, values := range form {
		if len(values) == 0 {
			continue
		}
		n := root
		for _, part := range strings.Split(key, ".") {
			if n.children == nil {
				n.children = map[string]*params{}
			}
			c, ok := n.children[part]
			if !ok {
				c = &params{}
				n.children[part] = c
			}
			n = c
		}
		n.value = values[0]
	}
	return root
}

// get is the child named name, or an empty node.
func (p *params) get(name string) *params {
	if p == nil || p.children[name] == nil {
		return &params{}
	}
	return p.children[name]
}

// str is the value of the child named name ("" when absent).
func (p *params) str(name string) string { return p.get(name).value }

// has reports whether the request set the child named name.
func (p *params) has(name string) bool { return p != nil && p.children[name] != nil }

// int32 is the child named name as a number (0 when absent or not one).
func (p *params) int32(name string) int32 {
	n, _ := strconv.ParseInt(p.str(name), 10, 32)
	return int32(n)
}

// list is the numbered children of the child named name, in order.
func (p *params) list(name string) []*params {
	n := p.get(name)
	if m, ok := n.children["member"]; ok {
		n = m
	}
	type indexed struct {
		i int
		p *params
	}
	var items []indexed
	for k, c := range n.children {
		if i, err := strconv.Atoi(k); err == nil {
			items = append(items, indexed{i, c})
		}
	}
	slices.SortFunc(items, func(a, b indexed) int { return a.i - b.i })
	out := make([]*params, len(items))
	for i, it := range items {
		out[i] = it.p
	}
	return out
}

// strs is the values of the list named name.
func (p *params) strs(name string) []string {
	var out []string
	for _, c := range p.list(name) {
		out = append(out, c.value)
	}
	return out
}

// tags reads a list of Key/Value pairs.
func (p *params) tags(name string) []tag {
	var out []tag
	for _, c := range p.list(name) {
		out = append(out, tag{Key: c.str("Key"), Value: c.str("Value")})
	}
	return out
}

// filter is one EC2 Filter: a name and the values any of which matches.
type filter struct {
	name   string
	values []string
}

func (p *params) filters() []filter {
	var out []filter
	for _, c := range p.list("Filter") {
		out = append(out, filter{name: c.str("Name"), values: c.strs("Value")})
	}
	return out
}

// apiError is an error the API answers with: its code is what the SDK's
// deserializers map to a typed error (LoadBalancerNotFound becomes
// AccessPointNotFoundException) and what the CCM tests for.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

// errCode is a client error (400) with an EC2 or Elastic Load Balancing
// error code: InvalidInstanceID.NotFound, ValidationError, ...
func errCode(code, format string, args ...any) *apiError {
	return &apiError{status: 400, code: code, message: fmt.Sprintf(format, args...)}
}

// ec2ErrorBody is EC2's error document.
type ec2ErrorBody struct {
	XMLName   xml.Name `xml:"Response"`
	Code      string   `xml:"Errors>Error>Code"`
	Message   string   `xml:"Errors>Error>Message"`
	RequestID string   `xml:"RequestID"`
}

// queryErrorBody is the Query protocol's error document (Elastic Load
// Balancing).
type queryErrorBody struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Type      string   `xml:"Error>Type"`
	Code      string   `xml:"Error>Code"`
	Message   string   `xml:"Error>Message"`
	RequestID string   `xml:"RequestId"`
}

// items is an EC2 list: each element an <item>.
type items[T any] struct {
	Items []T `xml:"item"`
}

func itemsOf[T any](v []T) *items[T] {
	if len(v) == 0 {
		return nil
	}
	return &items[T]{Items: v}
}

// members is an Elastic Load Balancing list: each element a <member>.
type members[T any] struct {
	Members []T `xml:"member"`
}

func membersOf[T any](v []T) *members[T] {
	return &members[T]{Members: v}
}

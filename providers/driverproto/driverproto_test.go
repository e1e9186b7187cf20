package driverproto

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestMainAnswersOneCall(t *testing.T) {
	handle := func(verb string, request []byte) (any, error) {
		switch verb {
		case "instance get":
			req, err := Decode[struct{ Name string }](request)
			if err != nil {
				return nil, err
			}
			if req.Name == "" {
				return nil, fmt.Errorf("instance %q: %w", req.Name, ErrNotFound)
			}
			return struct {
				Instance Instance `json:"instance"`
			}{Instance{Name: req.Name, Addresses: []Address{}}}, nil
		case "info":
			return Info{ProtocolVersion: Version, Provider: "test", Verbs: []string{"info", "instance get"}}, nil
		}
		return nil, errors.New("unknown verb")
	}
	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "an answer is one line of JSON", args: []string{"instance", "get"}, stdin: `{"name":"n1"}`, wantCode: ExitOK,
			wantStdout: `{"instance":{"id":"","name":"n1","providerID":"","zone":"","region":"","instanceType":"","state":"","addresses":[]}}` + "\n"},
		{name: "empty stdin is an empty request", args: []string{"info"}, wantCode: ExitOK,
			wantStdout: `{"protocolVersion":"v1","provider":"test","verbs":["info","instance get"]}` + "\n"},
		{name: "not found exits 3", args: []string{"instance", "get"}, stdin: "{}", wantCode: ExitNotFound,
			wantStderr: `test-driver instance get: instance "": not found` + "\n"},
		{name: "a bad request exits 1", args: []string{"instance", "get"}, stdin: `{"name":`, wantCode: ExitFailure,
			wantStderr: "test-driver instance get: decoding the request: unexpected end of JSON input\n"},
		{name: "an unknown verb exits 1", args: []string{"instance", "reboot"}, wantCode: ExitFailure,
			wantStderr: "test-driver instance reboot: unknown verb\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main("test-driver", tt.args, strings.NewReader(tt.stdin), &stdout, &stderr, handle)
			if code != tt.wantCode || stdout.String() != tt.wantStdout || stderr.String() != tt.wantStderr {
				t.Errorf("Main = %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout.String(), stderr.String(), tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

package driverproto

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
		return nil, errors.New("unreachable")
	}
	lookup := func(verb string) (Verb, error) {
		if verb != "info" && verb != "instance get" {
			return nil, errors.New("unknown verb")
		}
		return func(request []byte) (any, error) { return handle(verb, request) }, nil
	}
	tests := []struct {
		name       string
		args       []string
		stdin      io.Reader
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "an answer is one line of JSON", args: []string{"instance", "get"}, stdin: strings.NewReader(`{"name":"n1"}`), wantCode: ExitOK,
			wantStdout: `{"instance":{"id":"","name":"n1","providerID":"","zone":"","region":"","instanceType":"","state":"","addresses":[]}}` + "\n"},
		{name: "empty stdin is an empty request", args: []string{"info"}, stdin: strings.NewReader(""), wantCode: ExitOK,
			wantStdout: `{"protocolVersion":"v1","provider":"test","verbs":["info","instance get"]}` + "\n"},
		{name: "not found exits 3", args: []string{"instance", "get"}, stdin: strings.NewReader("{}"), wantCode: ExitNotFound,
			wantStderr: `test-driver instance get: instance "": not found` + "\n"},
		{name: "a bad request exits 1", args: []string{"instance", "get"}, stdin: strings.NewReader(`{"name":`), wantCode: ExitFailure,
			wantStderr: "test-driver instance get: decoding the request: unexpected end of JSON input\n"},
		// An unknown verb is refused before stdin is read: this one never ends.
		{name: "an unknown verb exits 1", args: []string{"instance", "reboot"}, stdin: blockingReader{}, wantCode: ExitFailure,
			wantStderr: "test-driver instance reboot: unknown verb\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main("test-driver", tt.args, tt.stdin, &stdout, &stderr, lookup)
			if code != tt.wantCode || stdout.String() != tt.wantStdout || stderr.String() != tt.wantStderr {
				t.Errorf("Main = %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout.String(), stderr.String(), tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

// blockingReader is a stdin nobody ever writes to.
type blockingReader struct{}

func (blockingReader) Read([]byte) (int, error) { select {} }

package command

import (
	"errors"
	"strings"
	"testing"
)

func TestError(t *testing.T) {
	exit := errors.New("exit status 1")
	for _, tt := range []struct {
		name string
		err  *Error
		want string
	}{
		{"no output", &Error{Command: "docker rm x", Err: exit}, "docker rm x: exit status 1"},
		{"one line stays one line", &Error{Command: "docker image inspect y", Output: []string{"Error: No such image: y "}, Err: exit},
			"docker image inspect y: exit status 1: Error: No such image: y"},
		{"lines follow, indented", &Error{Command: "CGO_ENABLED=0 go build ./x", Dir: "/src", Output: []string{"# x", "x/a.go:1:1: broken"}, Err: exit},
			"CGO_ENABLED=0 go build ./x (in /src): exit status 1\nlast lines of output:\n  # x\n  x/a.go:1:1: broken"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
		if !errors.Is(tt.err, exit) {
			t.Errorf("%s: does not unwrap to how it ended", tt.name)
		}
	}
	e := &Error{Output: []string{"Error response from daemon: No Such Container"}}
	if !e.Said("no such container") || e.Said("already in progress") {
		t.Error("Said")
	}
}

func TestTail(t *testing.T) {
	if got := Tail("a\nb\nc\n", 2); strings.Join(got, ",") != "b,c" {
		t.Errorf("Tail = %q", got)
	}
	if got := Tail("", 2); got != nil {
		t.Errorf("Tail of nothing = %q, want nil", got)
	}
}

func TestLine(t *testing.T) {
	got := Line("go", []string{"GOFLAGS=-mod=mod", "A=b c"}, []string{"build", "-o", "/tmp/x y", "./..."})
	want := `GOFLAGS=-mod=mod "A=b c" go build -o "/tmp/x y" ./...`
	if got != want {
		t.Errorf("Line = %s, want %s", got, want)
	}
}

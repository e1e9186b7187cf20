package echo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// Main runs the echo server with the command line args (without the
// program's name) and the environment getenv until ctx is done (the main
// cancels it on SIGTERM and SIGINT). It returns the exit code: 0 when
// stopped by ctx (or for -h), 1 when a socket failed, 2 for bad flags.
func Main(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	opts, err := ParseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "echo-server: %v\n", err)
		return 2
	}
	l, err := Listen(opts.Addresses())
	if err != nil {
		fmt.Fprintf(stderr, "echo-server: %v\n", err)
		return 1
	}
	s := &Server{Pod: opts.Pod, Node: opts.Node, Drain: opts.Drain, Log: slog.New(slog.NewTextHandler(stderr, nil))}
	if err := s.Serve(ctx, l); err != nil {
		fmt.Fprintf(stderr, "echo-server: %v\n", err)
		return 1
	}
	return 0
}

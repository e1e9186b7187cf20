// Command echo-server is the backend pod of the data path specs on real
// clusters: it answers every TCP connection, UDP datagram and HTTP GET /
// with one line, "echo pod=<pod> node=<node> client=<ip>", and serves GET
// /healthz. See internal/echo and docs/images.md.
//
// Floor: the commands, the top. They parse flags and delegate to the floors
// below.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ccm-conformance/ccm-conformance/internal/echo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := echo.Main(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}

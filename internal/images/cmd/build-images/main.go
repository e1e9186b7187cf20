// Command build-images builds the reference provider's CCM and cloud (or,
// with --targets, the echo server) into OCI images FROM scratch and loads
// them into the local Docker engine. `make images` runs it; see
// docs/images.md.
//
// Floor: a leaf. It links nothing of the harness but other leaves
// (internal/, kubeversion, labels); testsupport/floors holds that.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ccm-conformance/ccm-conformance/internal/images"
)

func main() {
	var opts images.Options
	fs := flag.NewFlagSet("build-images", flag.ExitOnError)
	fs.StringVar(&opts.OutDir, "out", "", "directory for the image tarballs (default "+images.DefaultOutDir+")")
	fs.StringVar(&opts.Repository, "repository", images.DefaultRepository, "prefix of the images' names")
	fs.StringVar(&opts.Version, "version", "", "version tag and label (default git describe --tags --always --dirty)")
	fs.BoolVar(&opts.Load, "load", true, "load the images into the local Docker engine (docker load -i)")
	set := fs.String("targets", images.SetReference, "images to build: "+strings.Join(images.TargetSetNames(), ", "))
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "build-images: unexpected arguments %q\n", fs.Args())
		os.Exit(2)
	}
	targets, err := images.TargetSet(*set)
	if err != nil {
		fmt.Fprintf(os.Stderr, "build-images: --targets: %v\n", err)
		os.Exit(2)
	}
	opts.Targets = targets
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	opts.Progress = os.Stdout
	if _, err := images.Build(ctx, opts); err != nil {
		fmt.Fprintf(os.Stderr, "build-images: %v\n", err)
		os.Exit(1)
	}
}

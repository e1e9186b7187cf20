// Command make-release is `make release` (docs/releasing.md): it writes a
// release of the checkout into a fresh directory.
//
// Floor: the tools, programs that build and test the project. They stand on
// the leaves.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ccm-conformance/ccm-conformance/tools/release"
)

func main() {
	var opts release.Options
	var platforms string
	flag.StringVar(&opts.OutDir, "out", "_output/release", "directory to write the release into (must be empty or absent)")
	flag.StringVar(&opts.Version, "version", "", "version to stamp (default: git describe --tags --always --dirty)")
	flag.StringVar(&platforms, "platforms", strings.Join(release.DefaultPlatforms, ","), "comma-separated linux/GOARCH pairs")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "make-release: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	opts.Platforms = strings.Split(platforms, ",")
	opts.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := release.Make(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "make-release: %v\n", err)
		os.Exit(2)
	}
	fmt.Printf("release %s in %s: %d binaries, %d SBOMs, %s, %s\n", res.Version, opts.OutDir, len(res.Binaries), len(res.SBOMs), res.Image, res.Checksums)
}

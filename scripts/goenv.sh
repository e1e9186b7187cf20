# Sourced by the scripts that run the go command (and by .ci/run): the one
# set of build flags of the project's builds and tests. The harness and
# reference provider binaries that tests start (testsupport/testbin), bin/
# (scripts/build.sh) and the images (internal/images) are static builds,
# CGO_ENABLED=0 with -trimpath; go vet, go test and the CLI that .ci/run
# builds use the same flags, so the go build cache compiles each package of
# the project's large dependency closure once, not once per flag set (a
# cold machine compiled client-go and the rest twice before).
export CGO_ENABLED=0
case " ${GOFLAGS:-} " in
  *" -trimpath "*) ;;
  *) export GOFLAGS="${GOFLAGS:+${GOFLAGS} }-trimpath" ;;
esac

module example.com/ccm/v2

go 1.25.0

toolchain go1.25.4

godebug (
	default=go1.24
	tlsmlkem=0
)

require k8s.io/cloud-provider v0.36.0

replace (
	github.com/google/cel-go => github.com/google/cel-go v0.31.0
	example.com/old v1.0.0 => example.com/new v1.0.1
	example.com/local => ../local
)

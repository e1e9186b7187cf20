// The go.mod of another module.
module example.com/not-kubernetes

go 1.26.0

replace k8s.io/api => ./staging/src/k8s.io/api

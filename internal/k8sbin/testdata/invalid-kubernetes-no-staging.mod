// A go.mod that names k8s.io/kubernetes but replaces nothing with ./staging.
module k8s.io/kubernetes

go 1.26.0

require k8s.io/api v0.37.2

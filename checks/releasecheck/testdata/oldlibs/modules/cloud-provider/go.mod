module k8s.io/cloud-provider

go 1.22

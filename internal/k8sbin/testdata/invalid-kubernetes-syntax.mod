module k8s.io/kubernetes

require (
	k8s.io/api

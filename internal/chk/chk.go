package chk

import (
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "github.com/spf13/cobra"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/cloud-provider/app"
	_ "k8s.io/cloud-provider/options"
	_ "k8s.io/component-base/cli"
	_ "sigs.k8s.io/json"
	_ "sigs.k8s.io/yaml"
)

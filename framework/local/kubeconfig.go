package local

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName names the cluster, user and context in the kubeconfigs.
const contextName = "ccm-conformance-local"

// writeKubeconfig writes a kubeconfig for server with the client credentials
// in user, with every certificate embedded so that the file can be copied
// elsewhere.
func writeKubeconfig(path, server string, caPEM []byte, user keyPair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{ClientCertificateData: user.cert, ClientKeyData: user.key}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	cfg.CurrentContext = contextName
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// restConfig returns a client configuration for server with the client
// credentials in user.
func restConfig(server string, caPEM []byte, user keyPair) *rest.Config {
	return &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   caPEM,
			CertData: user.cert,
			KeyData:  user.key,
		},
	}
}

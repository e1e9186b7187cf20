package local

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// certValidity is how long the local cluster's certificates are valid. A
// local cluster lives minutes to days.
const certValidity = 365 * 24 * time.Hour

// Identities of the client certificates.
const (
	adminUser             = "ccm-conformance-admin"
	adminGroup            = "system:masters"
	controllerManagerUser = "system:kube-controller-manager"
	frontProxyUser        = "front-proxy-client"
)

// keyPair is a PEM certificate and its PEM private key.
type keyPair struct {
	cert, key []byte
}

// pki holds the files of the local cluster's certificate authority, under
// <Dir>/pki.
type pki struct {
	dir string

	ca        keyPair
	caCert    *x509.Certificate
	caKey     crypto.Signer
	apiServer keyPair // serving certificate of kube-apiserver
	kcmServer keyPair // serving certificate of kube-controller-manager
	admin     keyPair // client certificate of the admin (system:masters)
	kcm       keyPair // client certificate of kube-controller-manager

	// frontProxyCA signs frontProxy, the client certificate kube-apiserver
	// presents to aggregated API servers; kube-controller-manager and
	// aggregated servers trust it for request headers.
	frontProxyCA keyPair
	frontProxy   keyPair

	// serviceAccountKey signs service-account tokens (RSA, PEM) and
	// serviceAccountPub verifies them.
	serviceAccountKey, serviceAccountPub []byte
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// newPKI makes a CA and every certificate and key the components need.
// serviceIPs are the first addresses of the Service networks, which
// in-cluster clients use to reach kube-apiserver.
func newPKI(dir string, now time.Time, serviceIPs []netip.Addr) (*pki, error) {
	p := &pki{dir: dir}
	caKey, caCert, err := newCA(now, "ccm-conformance-local-ca", &p.ca)
	if err != nil {
		return nil, err
	}
	p.caCert, p.caKey = caCert, caKey
	frontProxyKey, frontProxyCert, err := newCA(now, "ccm-conformance-local-front-proxy-ca", &p.frontProxyCA)
	if err != nil {
		return nil, err
	}

	loopback := []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}
	apiServerIPs := append([]net.IP(nil), loopback...)
	for _, a := range serviceIPs {
		apiServerIPs = append(apiServerIPs, a.AsSlice())
	}
	certs := []struct {
		into      *keyPair
		template  *x509.Certificate
		issuer    *x509.Certificate
		issuerKey crypto.Signer
	}{
		{&p.apiServer, &x509.Certificate{
			Subject: pkix.Name{CommonName: "kube-apiserver"},
			DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc.cluster.local"},
			IPAddresses: apiServerIPs,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}, caCert, caKey},
		{&p.kcmServer, &x509.Certificate{
			Subject:     pkix.Name{CommonName: "kube-controller-manager"},
			DNSNames:    []string{"localhost"},
			IPAddresses: loopback,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}, caCert, caKey},
		{&p.admin, &x509.Certificate{
			Subject:     pkix.Name{CommonName: adminUser, Organization: []string{adminGroup}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}, caCert, caKey},
		{&p.kcm, &x509.Certificate{
			Subject:     pkix.Name{CommonName: controllerManagerUser},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}, caCert, caKey},
		{&p.frontProxy, &x509.Certificate{
			Subject:     pkix.Name{CommonName: frontProxyUser},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}, frontProxyCert, frontProxyKey},
	}
	for _, c := range certs {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generating a key for %s: %w", c.template.Subject.CommonName, err)
		}
		c.template.NotBefore = now.Add(-time.Hour)
		c.template.NotAfter = now.Add(certValidity)
		c.template.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		if *c.into, _, err = sign(c.template, key, c.issuer, c.issuerKey); err != nil {
			return nil, fmt.Errorf("signing the certificate of %s: %w", c.template.Subject.CommonName, err)
		}
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generating the service-account key: %w", err)
	}
	p.serviceAccountKey = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("encoding the service-account public key: %w", err)
	}
	p.serviceAccountPub = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	return p, nil
}

// newCA makes a self-signed certificate authority named cn, stores its PEM
// files in into, and returns its key and certificate.
func newCA(now time.Time, cn string, into *keyPair) (crypto.Signer, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the key of %s: %w", cn, err)
	}
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	pair, cert, err := sign(template, key, nil, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the certificate of %s: %w", cn, err)
	}
	*into = pair
	return key, cert, nil
}

// sign makes a certificate from template for key, signed by parent and
// parentKey, or self-signed if parent is nil.
func sign(template *x509.Certificate, key crypto.Signer, parent *x509.Certificate, parentKey crypto.Signer) (keyPair, *x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return keyPair{}, nil, err
	}
	template.SerialNumber = serial
	if parent == nil {
		parent, parentKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, key.Public(), parentKey)
	if err != nil {
		return keyPair{}, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return keyPair{}, nil, err
	}
	return keyPair{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, cert, nil
}

// File names under <Dir>/pki.
const (
	caCertFile            = "ca.crt"
	caKeyFile             = "ca.key"
	apiServerCertFile     = "apiserver.crt"
	apiServerKeyFile      = "apiserver.key"
	kcmServerCertFile     = "kube-controller-manager-serving.crt"
	kcmServerKeyFile      = "kube-controller-manager-serving.key"
	adminCertFile         = "admin.crt"
	adminKeyFile          = "admin.key"
	kcmClientCertFile     = "kube-controller-manager.crt"
	kcmClientKeyFile      = "kube-controller-manager.key"
	serviceAccountKeyFile = "sa.key"
	serviceAccountPubFile = "sa.pub"
	frontProxyCACertFile  = "front-proxy-ca.crt"
	frontProxyCAKeyFile   = "front-proxy-ca.key"
	frontProxyCertFile    = "front-proxy-client.crt"
	frontProxyKeyFile     = "front-proxy-client.key"
)

// write writes every file to p.dir; private keys are readable by their
// owner only.
func (p *pki) write() error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("writing certificates: %w", err)
	}
	files := []struct {
		name    string
		data    []byte
		private bool
	}{
		{caCertFile, p.ca.cert, false},
		{caKeyFile, p.ca.key, true},
		{apiServerCertFile, p.apiServer.cert, false},
		{apiServerKeyFile, p.apiServer.key, true},
		{kcmServerCertFile, p.kcmServer.cert, false},
		{kcmServerKeyFile, p.kcmServer.key, true},
		{adminCertFile, p.admin.cert, false},
		{adminKeyFile, p.admin.key, true},
		{kcmClientCertFile, p.kcm.cert, false},
		{kcmClientKeyFile, p.kcm.key, true},
		{serviceAccountKeyFile, p.serviceAccountKey, true},
		{serviceAccountPubFile, p.serviceAccountPub, false},
		{frontProxyCACertFile, p.frontProxyCA.cert, false},
		{frontProxyCAKeyFile, p.frontProxyCA.key, true},
		{frontProxyCertFile, p.frontProxy.cert, false},
		{frontProxyKeyFile, p.frontProxy.key, true},
	}
	for _, f := range files {
		mode := os.FileMode(0o644)
		if f.private {
			mode = 0o600
		}
		if err := os.WriteFile(p.path(f.name), f.data, mode); err != nil {
			return fmt.Errorf("writing certificates: %w", err)
		}
	}
	return nil
}

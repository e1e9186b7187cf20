package local

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// checkTimeout bounds one readiness probe.
const checkTimeout = 2 * time.Second

// waitReady polls check until it succeeds, p exits, timeout passes or ctx
// ends.
func waitReady(ctx context.Context, p *process, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	var lastErr error
	for {
		if p.exited() {
			return fmt.Errorf("exited before it was ready: %v", p.waitErr)
		}
		checkCtx, cancelCheck := context.WithTimeout(ctx, checkTimeout)
		lastErr = check(checkCtx)
		cancelCheck()
		if lastErr == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited before it was ready: %v", p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %w (last check: %v)", timeout, ctx.Err(), lastErr)
		case <-ticker.C:
		}
	}
}

// httpGet fetches url with client and returns the body of a 200 response.
func httpGet(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64*1024))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return body, nil
}

// etcdHealthy checks etcd's /health endpoint.
func etcdHealthy(client *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		body, err := httpGet(ctx, client, url+"/health")
		if err != nil {
			return err
		}
		var health struct{ Health string }
		if err := json.Unmarshal(body, &health); err != nil {
			return fmt.Errorf("GET %s/health: %w", url, err)
		}
		if health.Health != "true" {
			return fmt.Errorf("GET %s/health: %s", url, body)
		}
		return nil
	}
}

// httpOK checks that url answers 200.
func httpOK(client *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := httpGet(ctx, client, url)
		return err
	}
}

// tlsClient returns an HTTP client that trusts caPEM and presents user.
func tlsClient(caPEM []byte, user keyPair) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no CA certificate to trust")
	}
	cert, err := tls.X509KeyPair(user.cert, user.key)
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}
	return &http.Client{Transport: transport}, nil
}

// controllersBuilt checks kube-controller-manager's /healthz?verbose. The
// endpoint answers as soon as the server runs, with a lone ping check; the
// controllers add one check each once they are all built, just before their
// informers start. So the controllers are on their way when a check other
// than ping is listed, and every check passes.
func controllersBuilt(client *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		body, err := httpGet(ctx, client, url+"/healthz?verbose")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "[+]") && !strings.HasPrefix(line, "[+]ping ") {
				return nil
			}
		}
		return fmt.Errorf("GET %s/healthz?verbose: no controller is built yet", url)
	}
}

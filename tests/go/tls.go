package main

// TLS for `cases` (-tls-ca CA [-tls-cert CERT -tls-key KEY]), for a server
// started with --cert-file (and --client-cert-auth).
//
// What the SDK (v2.3.2) needs set:
//   - ClientConfig.TLSCfg = constant.TLSConfig{Appointed: true, Enable:
//     true, CaFile, CertFile, KeyFile}. The gRPC client
//     (common/remote/rpc/grpc_client.go getTLSCredentials) trusts the system
//     roots plus CaFile and presents CertFile/KeyFile; its HTTP agent (the
//     login) uses common/tls.NewTLS: only CaFile (verified), or no check at
//     all when CaFile is empty. Without Appointed the SDK reads the same
//     settings from the environment (nacos_remote_client_rpc_tls_enable,
//     ..._trustAll, ..._trustCollectionChainPath, ..._certChainFile,
//     ..._certPrivateKey) and, with none set, keeps TLSCfg as given.
//   - ServerConfig.Scheme = "https" for the login URL
//     (common/security/nacos_auth_client.go builds it from the scheme).

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nacos-group/nacos-sdk-go/v2/common/constant"
)

// tlsFiles are the -tls-* flags of a run.
type tlsFiles struct {
	ca, cert, key string
}

// sdkConfig is the SDK's TLS setting for every client of the run.
func (f tlsFiles) sdkConfig() constant.TLSConfig {
	return constant.TLSConfig{
		Appointed: true,
		Enable:    true,
		CaFile:    f.ca,
		CertFile:  f.cert,
		KeyFile:   f.key,
	}
}

// useHTTPS points the servers' scheme and the driver's own HTTP checks
// (`admin`, the global httpClient) at HTTPS with the same files.
func (f tlsFiles) useHTTPS(servers []constant.ServerConfig, admin *api) error {
	pem, err := os.ReadFile(f.ca)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return fmt.Errorf("no certificate in %s", f.ca)
	}
	cfg := &tls.Config{RootCAs: roots}
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	httpClient = &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{Proxy: nil, TLSClientConfig: cfg},
	}
	admin.base = "https://" + strings.TrimPrefix(admin.base, "http://")
	for i := range servers {
		servers[i].Scheme = "https"
	}
	return nil
}

package cli_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/cli"
)

// certs is a throwaway CA with a server certificate for 127.0.0.1 and a
// client certificate, written as PEM files.
type certs struct {
	dir                       string
	pool                      *x509.CertPool
	client                    tls.Certificate
	caFile, certFile, keyFile string
}

func newCerts(t *testing.T) certs {
	t.Helper()
	c := certs{dir: t.TempDir(), pool: x509.NewCertPool()}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	c.pool.AddCert(ca)
	leaf := func(serial int64, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "leaf"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(c.dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	c.caFile = write("ca.pem", "CERTIFICATE", caDER)
	srvDER, srvKey := leaf(2, x509.ExtKeyUsageServerAuth)
	c.certFile = write("server.pem", "CERTIFICATE", srvDER)
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	c.keyFile = write("server.key", "EC PRIVATE KEY", keyDER)
	cliDER, cliKey := leaf(3, x509.ExtKeyUsageClientAuth)
	c.client = tls.Certificate{Certificate: [][]byte{cliDER}, PrivateKey: cliKey}
	return c
}

// TestServerMutualTLS: stint server with --tls-cert, --tls-key and
// --client-ca serves HTTPS, and refuses a client without a certificate
// signed by the CA before any request is read.
func TestServerMutualTLS(t *testing.T) {
	t.Parallel()
	c := newCerts(t)
	db := filepath.Join(t.TempDir(), "stint.db")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"--db", db, "server", "--listen", "127.0.0.1:0", "--no-auth",
			"--tls-cert", c.certFile, "--tls-key", c.keyFile, "--client-ca", c.caFile},
			cli.Env{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }})
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("stint server exited %d: %s", code, errs.String())
		}
	}()
	var url string
	for deadline := time.Now().Add(patience); url == ""; tick(t) {
		if u, ok := strings.CutPrefix(strings.TrimSpace(out.String()), "stint server listening on "); ok {
			url = u
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never listened: %s", errs.String())
		}
	}
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("listening on %s, want https", url)
	}
	post := func(certs []tls.Certificate) (*http.Response, error) {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.pool, Certificates: certs}}}
		return client.Post(url+"/stint.v1.JobService/ListJobs", "application/json", strings.NewReader(`{}`))
	}
	if _, err := post(nil); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	resp, err := post([]tls.Certificate{c.client})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d with a client certificate", resp.StatusCode)
	}
}

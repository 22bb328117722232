package idmint

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// selfSignedCert writes a certificate for 127.0.0.1 signed by a CA made here, and its key;
// it returns their paths and the CA's PEM.
func selfSignedCert(t *testing.T) (certFile, keyFile string, caPEM []byte) {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "idmint go test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	leafPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})
	if err := os.WriteFile(certFile, leafPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, caPEM
}

func TestTLSWithTheOperatorsCA(t *testing.T) {
	cert, key, caPEM := selfSignedCert(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	n := startNodeTLS(t, sqliteStore(t), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"},
		"--tls-cert", cert, "--tls-key", key)
	url := "rediss://127.0.0.1:" + itoa(int64(n.resp))
	c := newClient(t, Config{Nodes: []string{url}, CAPEM: caPEM})
	for i := 0; i < 3; i++ {
		if _, err := c.Next(bg, "tls"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Snowflake(bg); err != nil {
		t.Fatal(err)
	}
	// Without the CA the node's certificate is not trusted: the node counts as failed.
	untrusting := newClient(t, Config{Nodes: []string{url}, MaxWait: 300 * time.Millisecond})
	if _, err := untrusting.Next(bg, "tls"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("%v, want ErrUnavailable", err)
	}
}

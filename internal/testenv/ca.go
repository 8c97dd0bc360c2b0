package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority for tests' TLS servers.
type CA struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	der  []byte
}

var (
	processCAOnce sync.Once
	processCA     *CA
	processCAErr  error
	serial        atomic.Int64
)

// ProcessCA is the test process's one CA, made on first use. One for the
// process because Go reads SSL_CERT_FILE once per process: a test that
// points SSL_CERT_FILE at the CA and runs again (-count) must meet the same
// CA.
func ProcessCA(t testing.TB) *CA {
	t.Helper()
	processCAOnce.Do(func() {
		processCA, processCAErr = newCA()
	})
	if processCAErr != nil {
		t.Fatalf("making the test CA: %v", processCAErr)
	}
	return processCA
}

func newCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: "capabilities test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{key: key, cert: cert, der: der}, nil
}

// Pool is a certificate pool trusting the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// ServerCert is a server certificate a CA issued, with its files.
type ServerCert struct {
	Dir  string // holds hub.crt, hub.key and ca.pem
	Cert string // Dir/hub.crt: the certificate (PEM)
	Key  string // Dir/hub.key: its private key (PKCS #8 PEM)
	CA   string // Dir/ca.pem: the issuing CA's certificate (PEM)
	SPKI string // base64 SHA-256 of the public key (Chromium's --ignore-certificate-errors-spki-list)
}

// Issue makes a server certificate for hosts (DNS names or IP addresses;
// the first is also its common name), valid for a day, and writes it to a
// new folder removed when the test ends. The folder is not under
// t.TempDir, whose parents are root's and mode 700: nginx's unprivileged
// worker must read it when the test runs as root.
func (ca *CA) Issue(t testing.TB, hosts ...string) *ServerCert {
	t.Helper()
	if len(hosts) == 0 {
		t.Fatal("issuing a test certificate: no host names")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: hosts[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			leaf.IPAddresses = append(leaf.IPAddresses, ip)
		} else {
			leaf.DNSNames = append(leaf.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("issuing a test certificate: %v", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "capabilities-tls-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pub)
	c := &ServerCert{
		Dir: dir, Cert: filepath.Join(dir, "hub.crt"), Key: filepath.Join(dir, "hub.key"), CA: filepath.Join(dir, "ca.pem"),
		SPKI: base64.StdEncoding.EncodeToString(sum[:]),
	}
	for file, b := range map[string]*pem.Block{
		c.Cert: {Type: "CERTIFICATE", Bytes: der},
		c.Key:  {Type: "PRIVATE KEY", Bytes: keyDER},
		c.CA:   {Type: "CERTIFICATE", Bytes: ca.der},
	} {
		if err := os.WriteFile(file, pem.EncodeToMemory(b), 0o644); err != nil {
			t.Fatalf("writing the test certificate: %v", err)
		}
	}
	return c
}

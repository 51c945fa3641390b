package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// selfSignedCert makes a certificate for 127.0.0.1, ::1 and localhost, valid for a year
// from now, and its key. The certificate is its own issuer and may sign nothing else, so a
// client that trusts it (as a root: Go's x509.CertPool, NODE_EXTRA_CA_CERTS, Python's
// verify=, .NET's X509Store) trusts this server and nothing more.
func selfSignedCert(now time.Time) (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Tabula self-signed (127.0.0.1, localhost)"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, certPEM, nil
}

// tlsConfig loads --cert and --key, or makes a self-signed certificate and writes it to
// certPath for clients to trust. It returns the config and where the certificate is.
func tlsConfig(cfg *config, certPath string, now time.Time) (*tls.Config, error) {
	var cert tls.Certificate
	if cfg.selfSigned {
		c, certPEM, err := selfSignedCert(now)
		if err != nil {
			return nil, fmt.Errorf("making a self-signed certificate: %w", err)
		}
		if err := os.WriteFile(certPath, certPEM, 0o644); err != nil {
			return nil, fmt.Errorf("writing the self-signed certificate: %w", err)
		}
		cert = c
	} else if cfg.pfx {
		c, err := loadPFX(cfg.certFile, cfg.pfxPassword)
		if err != nil {
			return nil, err
		}
		cert = c
	} else {
		c, err := tls.LoadX509KeyPair(cfg.certFile, cfg.keyFile)
		if err != nil {
			return nil, fmt.Errorf("loading --cert and --key: %w", err)
		}
		cert = c
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// loadPFX reads a PKCS#12 (.pfx) file holding a certificate, its key and any intermediate
// certificates, as Azurite's --cert with --pwd does.
func loadPFX(path, password string) (tls.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("reading --cert: %w", err)
	}
	key, leaf, chain, err := pkcs12.DecodeChain(data, password)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("reading the .pfx file %s (is --pwd right?): %w", path, err)
	}
	cert := tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}

package secret

// The key-encryption key of sealed secrets (sealed.go): read from a
// file or the environment, made, written, and named by its fingerprint.

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KEK is a key-encryption key and where it came from.
type KEK struct {
	key [KEKSize]byte
	// Source says where it was read: "CAPABILITIES_KEK_FILE /path",
	// "CAPABILITIES_KEK", or a file path.
	Source string
}

// Fingerprint names the key without revealing it: the first 8 bytes of a
// SHA-256 of it, in hex.
func (k *KEK) Fingerprint() string { return fingerprint(k.key[:]) }

func fingerprint(key []byte) string {
	sum := sha256.Sum256(append([]byte("capabilities.sh kek fingerprint\x00"), key...))
	return hex.EncodeToString(sum[:fingerprintSz])
}

// ParseKEK reads a key from data: 32 raw bytes, or their base64 (standard
// or URL alphabet, padded or not, surrounding whitespace ignored). where
// names the data in errors.
func ParseKEK(data []byte, where string) (*KEK, error) {
	if len(data) == KEKSize {
		k := &KEK{Source: where}
		copy(k.key[:], data)
		return k, nil
	}
	text := strings.TrimSpace(string(data))
	if text == "" {
		return nil, fmt.Errorf("reading the key-encryption key from %s: it is empty; %s", where, kekHint)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(text)
		if err != nil {
			continue
		}
		if len(b) != KEKSize {
			return nil, fmt.Errorf("reading the key-encryption key from %s: it decodes to %d bytes, want %d; %s", where, len(b), KEKSize, kekHint)
		}
		k := &KEK{Source: where}
		copy(k.key[:], b)
		return k, nil
	}
	return nil, fmt.Errorf("reading the key-encryption key from %s: %d bytes that are neither %d raw bytes nor base64 of them; %s", where, len(data), KEKSize, kekHint)
}

// ReadKEKFile reads a key from a file, refusing one that others can read.
func ReadKEKFile(path string) (*KEK, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading the key-encryption key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("reading the key-encryption key: %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("reading the key-encryption key: %s has mode %04o: others can read it or change it; restrict it to its owner: chmod 600 %s", path, perm, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the key-encryption key: %w", err)
	}
	return ParseKEK(data, path)
}

// KEKFromEnv reads the key named by CAPABILITIES_KEK_FILE or
// CAPABILITIES_KEK (getenv is os.Getenv, or a test's). It returns nil and
// no error when neither is set.
func KEKFromEnv(getenv func(string) string) (*KEK, error) {
	file, val := getenv(EnvKEKFile), getenv(EnvKEK)
	switch {
	case file != "" && val != "":
		return nil, fmt.Errorf("reading the key-encryption key: both %s and %s are set; set one", EnvKEKFile, EnvKEK)
	case file != "":
		k, err := ReadKEKFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKEKFile, err)
		}
		k.Source = EnvKEKFile + " " + file
		return k, nil
	case val != "":
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("reading the key-encryption key: %s is not base64 (%v); %s", EnvKEK, err, kekHint)
		}
		if len(b) != KEKSize {
			return nil, fmt.Errorf("reading the key-encryption key: %s decodes to %d bytes, want %d; %s", EnvKEK, len(b), KEKSize, kekHint)
		}
		k := &KEK{Source: EnvKEK}
		copy(k.key[:], b)
		return k, nil
	}
	return nil, nil
}

// NewKEK makes a random key.
func NewKEK() (*KEK, error) {
	k := &KEK{Source: "a new key"}
	if _, err := rand.Read(k.key[:]); err != nil {
		return nil, fmt.Errorf("making a key-encryption key: %w", err)
	}
	return k, nil
}

// WriteKEKFile writes k to a new file, base64 and a newline, mode 600. It
// refuses to replace an existing file (a key that seals secrets must not be
// lost by a typo).
func WriteKEKFile(path string, k *KEK) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing the key-encryption key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("writing the key-encryption key: %s already exists; name a new file (an existing key is never overwritten)", path)
	}
	if err != nil {
		return fmt.Errorf("writing the key-encryption key: %w", err)
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(k.key[:]) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("writing the key-encryption key to %s: %w", path, err)
	}
	k.Source = path
	return nil
}

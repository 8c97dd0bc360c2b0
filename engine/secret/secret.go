// Package secret keeps the values behind a connection's secret references:
// in the OS keychain (through go-keyring, under the service
// "capabilities.sh", one item per reference), or, when there is no usable
// keychain, in a mode-600 JSON file that the store announces every time it
// uses it.
//
// A reference ("github/work") names a secret; connections hold references,
// never values. A value is read only at the moment of an upstream request,
// after policy and approval (a denied call never touches a credential; Spy
// lets tests prove it).
package secret

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

var (
	// ErrNotFound: no secret is stored under the reference.
	ErrNotFound = errors.New("secret not found")
	// ErrEmpty: an empty value cannot be stored.
	ErrEmpty = errors.New("empty secret: nothing to store")
	// ErrInvalidRef: the reference is not 1–128 characters of [a-z0-9_./-].
	ErrInvalidRef = errors.New("invalid secret reference")
	// ErrUnavailable: neither the keychain nor a fallback file can be used.
	ErrUnavailable = errors.New("no secret store available")
)

// MaxRefLen is the longest reference accepted, in bytes.
const MaxRefLen = 128

// Store is what the hub needs from a secret store. Keyring, Memory and Spy
// implement it.
type Store interface {
	Get(ctx context.Context, ref string) (string, error)
	Set(ctx context.Context, ref, value string) error
	Delete(ctx context.Context, ref string) error
}

// ValidateRef checks that ref is 1–128 characters of a-z, 0-9, '_', '.',
// '/' and '-'. The error wraps ErrInvalidRef and says what is wrong.
func ValidateRef(ref string) error {
	if ref == "" {
		return fmt.Errorf("%w: empty", ErrInvalidRef)
	}
	if len(ref) > MaxRefLen {
		return fmt.Errorf("%w: %d characters, at most %d", ErrInvalidRef, len(ref), MaxRefLen)
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-' {
			continue
		}
		r, _ := utf8.DecodeRuneInString(ref[i:])
		return fmt.Errorf("%w %q: character %q at offset %d (allowed: a-z 0-9 _ . / -)", ErrInvalidRef, ref, r, i)
	}
	return nil
}

// Backend names where a store keeps its values.
type Backend string

const (
	// BackendKeychain is the OS keychain (Secret Service on Linux, Keychain
	// on macOS, Credential Manager on Windows).
	BackendKeychain Backend = "keychain"
	// BackendFile is the mode-600 fallback file.
	BackendFile Backend = "file"
	// BackendMemory is the in-memory store of tests.
	BackendMemory Backend = "memory"
)

// Status says where a store keeps its values and, for the file, why.
type Status struct {
	Backend Backend `json:"backend"`
	// Reason says why the keychain is not used; empty for the keychain.
	Reason string `json:"reason,omitempty"`
	// File is the fallback file, also when the keychain is in use.
	File string `json:"file,omitempty"`
}

// String is one line for `doctor`.
func (s Status) String() string {
	switch s.Backend {
	case BackendFile:
		return fmt.Sprintf("file %s (not the OS keychain: %s)", s.File, s.Reason)
	case "":
		return "unknown"
	}
	return string(s.Backend)
}

package secret

// The hub's own keys on a database store (the elicitation signing key,
// the approval page's link key, the bearer token of serve --http), sealed
// among the hub's sealed secrets when it has them: a dump of the database
// then holds none of them in clear, and a KEK rotation re-seals them with
// the credentials. Each is a sealed value under the reference
// ".hub/<name>" (a reference no connection has: a namespace never starts
// with a dot), its bytes in hex.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/capabilities-sh/capabilities/store"
)

// PlainKeys is a database store's own table of the hub's keys, in clear
// (store/postgres.Store).
type PlainKeys interface {
	Key(ctx context.Context, name string, size int) (key []byte, created bool, err error)
	LookupKey(ctx context.Context, name string) ([]byte, error)
	DeleteKey(ctx context.Context, name string) error
	Spend(ctx context.Context, purpose, id string, expires time.Time) (bool, error)
}

// Keys is where a hub process finds its own keys: the store's table, or
// HubKeys.
type Keys interface {
	// Key returns the key called name, making it (size random bytes) when
	// there is none; every process over the store gets the same bytes.
	Key(ctx context.Context, name string, size int) (key []byte, created bool, err error)
	// LookupKey returns it without making it: an error wrapping
	// store.ErrNotFound when there is none.
	LookupKey(ctx context.Context, name string) ([]byte, error)
	// Spend spends a one-time thing (the approval page's links).
	Spend(ctx context.Context, purpose, id string, expires time.Time) (bool, error)
}

// HubKeyRefPrefix starts the reference of a hub key kept sealed.
const HubKeyRefPrefix = ".hub/"

// KeysOf returns the keys of a hub whose store keeps them (plain, the
// store itself): sealed (HubKeys) when the hub's secrets are sealed under a
// KEK (CAPABILITIES_KEK_FILE or CAPABILITIES_KEK is set), else plain. An
// error when they are sealed and cannot be opened (no KEK, the wrong one):
// a process that made a key of its own in clear would serve with another
// token than the others.
func KeysOf(ctx context.Context, st store.Store, plain PlainKeys, hubID string) (Keys, error) {
	s, err := FromEnv(ctx, st, hubID)
	if err != nil {
		return nil, fmt.Errorf("reading the hub's keys: %w", err)
	}
	if s == nil {
		return plain, nil
	}
	return &HubKeys{sealed: s, plain: plain}, nil
}

// HubKeys keeps the hub's keys sealed among its secrets. A key the store's
// table holds in clear from before (the hub's secrets were sealed later)
// is adopted: sealed, then deleted from the table, so that tokens and
// signatures made with it stay good.
type HubKeys struct {
	sealed *Sealed
	plain  PlainKeys
}

// NewHubKeys returns the keys sealed in s, adopting those of plain.
func NewHubKeys(s *Sealed, plain PlainKeys) *HubKeys { return &HubKeys{sealed: s, plain: plain} }

// Key returns the key called name, making it when there is none: the first
// process to seal one wins, the others read it.
func (k *HubKeys) Key(ctx context.Context, name string, size int) (key []byte, created bool, err error) {
	if name == "" || size < 16 {
		return nil, false, fmt.Errorf("reading the hub's key %q: a name and at least 16 bytes are needed", name)
	}
	key, err = k.LookupKey(ctx, name)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return key, false, err
	}
	fresh := make([]byte, size)
	if _, err := rand.Read(fresh); err != nil {
		return nil, false, fmt.Errorf("making the hub's key %s: %w", name, err)
	}
	// Never in clear, even for a moment: the first process to seal one
	// wins, the others read it.
	v, created, err := k.sealed.create(ctx, HubKeyRefPrefix+name, hex.EncodeToString(fresh))
	if err != nil {
		return nil, false, fmt.Errorf("making the hub's key %s: %w", name, err)
	}
	if key, err = hex.DecodeString(v); err != nil {
		return nil, false, fmt.Errorf("%w: the hub's key %s is not hex", ErrSealed, name)
	}
	return key, created, nil
}

// LookupKey returns the key called name without making one.
func (k *HubKeys) LookupKey(ctx context.Context, name string) ([]byte, error) {
	v, err := k.sealed.Get(ctx, HubKeyRefPrefix+name)
	if err == nil {
		key, err := hex.DecodeString(v)
		if err != nil || len(key) < 16 {
			return nil, fmt.Errorf("%w: the hub's key %s (%s%s) is not hex of 16 bytes or more", ErrSealed, name, HubKeyRefPrefix, name)
		}
		return key, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("reading the hub's key %s: %w", name, err)
	}
	// One made before the secrets were sealed: adopt it.
	plain, err := k.plain.LookupKey(ctx, name)
	if err != nil {
		return nil, err
	}
	return k.adopt(ctx, name, plain)
}

// adopt seals key as the key called name unless one is sealed already
// (then that one is the key), and deletes the table's copy.
func (k *HubKeys) adopt(ctx context.Context, name string, key []byte) ([]byte, error) {
	v, _, err := k.sealed.create(ctx, HubKeyRefPrefix+name, hex.EncodeToString(key))
	if err != nil {
		return nil, fmt.Errorf("sealing the hub's key %s: %w", name, err)
	}
	if err := k.plain.DeleteKey(ctx, name); err != nil {
		return nil, fmt.Errorf("sealing the hub's key %s: %w", name, err)
	}
	if key, err = hex.DecodeString(v); err != nil {
		return nil, fmt.Errorf("%w: the hub's key %s is not hex", ErrSealed, name)
	}
	return key, nil
}

// Spend is the store's.
func (k *HubKeys) Spend(ctx context.Context, purpose, id string, expires time.Time) (bool, error) {
	return k.plain.Spend(ctx, purpose, id, expires)
}

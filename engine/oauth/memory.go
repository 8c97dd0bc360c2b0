package oauth

import (
	"context"
	"sync"
)

// MemoryStore is a Store in memory, for one process: a sign-in that is not
// kept (the conformance client) and tests. It counts saves and remembers
// why a sign-in is needed. The zero value is an empty store.
type MemoryStore struct {
	mu     sync.Mutex
	t      *Tokens
	saves  int
	reason string
	lock   sync.Mutex
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore is a MemoryStore holding t.
func NewMemoryStore(t *Tokens) *MemoryStore {
	m := &MemoryStore{}
	if t != nil {
		c := *t
		m.t = &c
	}
	return m
}

// Load returns a copy of the tokens (nil when none were saved).
func (m *MemoryStore) Load(context.Context) (*Tokens, error) {
	return m.Tokens(), nil
}

// Save keeps a copy of t.
func (m *MemoryStore) Save(_ context.Context, t *Tokens) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *t
	m.t, m.saves = &c, m.saves+1
	return nil
}

// Lock serializes refreshes within the process.
func (m *MemoryStore) Lock(context.Context) (func(), error) {
	m.lock.Lock()
	return m.lock.Unlock, nil
}

// SignInNeeded remembers why.
func (m *MemoryStore) SignInNeeded(_ context.Context, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reason = reason
	return nil
}

// Tokens returns a copy of the tokens last saved (nil: none).
func (m *MemoryStore) Tokens() *Tokens {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.t == nil {
		return nil
	}
	c := *m.t
	return &c
}

// Saves is how many times Save was called.
func (m *MemoryStore) Saves() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.saves
}

// Reason is what SignInNeeded last recorded ("" for nothing).
func (m *MemoryStore) Reason() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reason
}

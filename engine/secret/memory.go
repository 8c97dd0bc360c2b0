package secret

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Memory keeps secrets in memory, for tests of logic that needs a Store.
// The zero value is empty and ready to use; it is safe for concurrent use
// and validates references and values like Keyring.
type Memory struct {
	mu sync.Mutex
	m  map[string]string
}

var _ Store = (*Memory)(nil)

// NewMemory returns a Memory holding values (reference → value).
func NewMemory(values map[string]string) *Memory {
	m := &Memory{m: make(map[string]string, len(values))}
	for ref, v := range values {
		m.m[ref] = v
	}
	return m
}

// Get returns the value stored under ref.
func (m *Memory) Get(ctx context.Context, ref string) (string, error) {
	if err := ValidateRef(ref); err != nil {
		return "", fmt.Errorf("getting secret: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[ref]
	if !ok {
		return "", fmt.Errorf("getting secret %s: %w", ref, ErrNotFound)
	}
	return v, nil
}

// Set stores value under ref.
func (m *Memory) Set(ctx context.Context, ref, value string) error {
	if err := ValidateRef(ref); err != nil {
		return fmt.Errorf("storing secret: %w", err)
	}
	if value == "" {
		return fmt.Errorf("storing secret %s: %w", ref, ErrEmpty)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]string{}
	}
	m.m[ref] = value
	return nil
}

// Delete removes ref.
func (m *Memory) Delete(ctx context.Context, ref string) error {
	if err := ValidateRef(ref); err != nil {
		return fmt.Errorf("deleting secret: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.m[ref]; !ok {
		return fmt.Errorf("deleting secret %s: %w", ref, ErrNotFound)
	}
	delete(m.m, ref)
	return nil
}

// Status reports the memory backend.
func (m *Memory) Status() Status { return Status{Backend: BackendMemory} }

// Spy wraps a Store and records every Get, so that a test can prove that a
// call was (or, for a denied call, was not) given a credential.
type Spy struct {
	Store Store

	mu   sync.Mutex
	gets []string
}

var _ Store = (*Spy)(nil)

// NewSpy wraps s.
func NewSpy(s Store) *Spy { return &Spy{Store: s} }

// Get records ref, then reads through the wrapped store.
func (s *Spy) Get(ctx context.Context, ref string) (string, error) {
	s.mu.Lock()
	s.gets = append(s.gets, ref)
	s.mu.Unlock()
	return s.Store.Get(ctx, ref)
}

// Set stores through the wrapped store; it is not recorded.
func (s *Spy) Set(ctx context.Context, ref, value string) error {
	return s.Store.Set(ctx, ref, value)
}

// Delete deletes through the wrapped store; it is not recorded.
func (s *Spy) Delete(ctx context.Context, ref string) error {
	return s.Store.Delete(ctx, ref)
}

// Gets returns the references read so far, in order, with repeats.
func (s *Spy) Gets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.gets)
}

// Reset forgets the recorded reads.
func (s *Spy) Reset() {
	s.mu.Lock()
	s.gets = nil
	s.mu.Unlock()
}

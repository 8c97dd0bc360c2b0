package identity

import (
	"context"
	"sync"
	"time"
)

// Session is a signed-in browser's record; its cookie carries only ID.
type Session struct {
	ID      string
	Account Account
	Created time.Time
	Expires time.Time
}

// Store keeps sessions and the sign-in states already used (so a callback
// cannot be replayed). A PostgreSQL store implements it for a hub of many
// replicas; MemoryStore serves one process.
type Store interface {
	PutSession(ctx context.Context, s Session) error
	// GetSession returns the session with this id, false when there is none.
	GetSession(ctx context.Context, id string) (Session, bool, error)
	DeleteSession(ctx context.Context, id string) error
	// UseState records that the sign-in state was used; false when it
	// already was. It may forget a state after expires.
	UseState(ctx context.Context, state string, expires time.Time) (bool, error)
}

// MemoryStore is a Store in this process's memory.
type MemoryStore struct {
	mu       sync.Mutex
	sessions map[string]Session
	states   map[string]time.Time
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{sessions: map[string]Session{}, states: map[string]time.Time{}}
}

// PutSession implements Store.
func (m *MemoryStore) PutSession(_ context.Context, s Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Sessions nobody came back for end here (a sign-in is rare enough
	// for this sweep not to matter).
	now := time.Now()
	for id, old := range m.sessions {
		if now.After(old.Expires) {
			delete(m.sessions, id)
		}
	}
	m.sessions[s.ID] = s
	return nil
}

// GetSession implements Store.
func (m *MemoryStore) GetSession(_ context.Context, id string) (Session, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	return s, ok, nil
}

// DeleteSession implements Store.
func (m *MemoryStore) DeleteSession(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, id)
	return nil
}

// UseState implements Store.
func (m *MemoryStore) UseState(_ context.Context, state string, expires time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for s, exp := range m.states {
		if now.After(exp) {
			delete(m.states, s)
		}
	}
	if _, used := m.states[state]; used {
		return false, nil
	}
	m.states[state] = expires
	return true, nil
}

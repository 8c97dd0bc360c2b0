package authserver

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrNotFound is what a Store returns for an unknown client, code or token.
var ErrNotFound = errors.New("not found")

// ErrUsed is what a Store returns when a single-use authorization code or
// refresh token is presented a second time, together with the record, so
// the server can revoke the family it started.
var ErrUsed = errors.New("already used")

// Client is a registered OAuth client (RFC 7591).
type Client struct {
	ID           string
	SecretHash   string // hex SHA-256 of the client secret; empty for public clients
	AuthMethod   string // "none", "client_secret_basic" or "client_secret_post"
	Name         string
	RedirectURIs []string
	Scope        string
	Created      time.Time
}

// Code is an issued authorization code, stored by the SHA-256 of its value.
type Code struct {
	Hash        string
	ClientID    string
	Tenant      string
	RedirectURI string
	Resource    string
	Scope       string
	Challenge   string // PKCE S256 code_challenge
	Family      string // the grant family the code starts
	Expires     time.Time
	Used        bool
}

// Kind says what a Token is.
type Kind string

const (
	Access  Kind = "access"
	Refresh Kind = "refresh"
)

// Token is an issued access or refresh token, stored by the SHA-256 of its
// value; the value itself is never stored.
type Token struct {
	Hash     string
	Kind     Kind
	ClientID string
	Tenant   string
	Resource string
	Scope    string
	Family   string // every token from one authorization shares it
	Expires  time.Time
	Used     bool // a rotated refresh token
	Revoked  bool
}

// Store keeps clients, codes and tokens. Every method must be safe for
// concurrent use, and UseCode and UseRefresh must be atomic: of two
// concurrent uses, exactly one gets a nil error.
type Store interface {
	CreateClient(ctx context.Context, c Client) error
	Client(ctx context.Context, id string) (Client, error)

	CreateCode(ctx context.Context, c Code) error
	// UseCode marks the code used and returns it; a second use returns
	// the code and ErrUsed.
	UseCode(ctx context.Context, hash string) (Code, error)

	CreateTokens(ctx context.Context, ts ...Token) error
	// Token returns a token; Revoked is true if it or its family was revoked.
	Token(ctx context.Context, hash string) (Token, error)
	// UseRefresh marks a refresh token used and returns it; a second use
	// returns the token and ErrUsed.
	UseRefresh(ctx context.Context, hash string) (Token, error)
	RevokeToken(ctx context.Context, hash string) error
	// RevokeFamily revokes every token of a family, including any
	// created after this call.
	RevokeFamily(ctx context.Context, family string) error
}

// Memory is an in-memory Store, for tests and single-process use.
type Memory struct {
	mu       sync.Mutex
	clients  map[string]Client
	codes    map[string]Code
	tokens   map[string]Token
	families map[string]bool // revoked
}

// NewMemory returns an empty in-memory Store.
func NewMemory() *Memory {
	return &Memory{
		clients:  map[string]Client{},
		codes:    map[string]Code{},
		tokens:   map[string]Token{},
		families: map[string]bool{},
	}
}

func (m *Memory) CreateClient(_ context.Context, c Client) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.clients[c.ID]; ok {
		return errors.New("creating client: id taken")
	}
	c.RedirectURIs = append([]string(nil), c.RedirectURIs...)
	m.clients[c.ID] = c
	return nil
}

func (m *Memory) Client(_ context.Context, id string) (Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.clients[id]
	if !ok {
		return Client{}, ErrNotFound
	}
	return c, nil
}

func (m *Memory) CreateCode(_ context.Context, c Code) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.codes[c.Hash] = c
	return nil
}

func (m *Memory) UseCode(_ context.Context, hash string) (Code, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.codes[hash]
	if !ok {
		return Code{}, ErrNotFound
	}
	if c.Used {
		return c, ErrUsed
	}
	c.Used = true
	m.codes[hash] = c
	return c, nil
}

func (m *Memory) CreateTokens(_ context.Context, ts ...Token) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range ts {
		m.tokens[t.Hash] = t
	}
	return nil
}

func (m *Memory) Token(_ context.Context, hash string) (Token, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[hash]
	if !ok {
		return Token{}, ErrNotFound
	}
	t.Revoked = t.Revoked || m.families[t.Family]
	return t, nil
}

func (m *Memory) UseRefresh(_ context.Context, hash string) (Token, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[hash]
	if !ok || t.Kind != Refresh {
		return Token{}, ErrNotFound
	}
	t.Revoked = t.Revoked || m.families[t.Family]
	if t.Used {
		return t, ErrUsed
	}
	t.Used = true
	m.tokens[hash] = t
	return t, nil
}

func (m *Memory) RevokeToken(_ context.Context, hash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.tokens[hash]; ok {
		t.Revoked = true
		m.tokens[hash] = t
	}
	return nil
}

func (m *Memory) RevokeFamily(_ context.Context, family string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.families[family] = true
	for h, t := range m.tokens {
		if t.Family == family {
			t.Revoked = true
			m.tokens[h] = t
		}
	}
	return nil
}

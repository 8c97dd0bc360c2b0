// Package model holds the hub's pure data contracts: sources, manifests,
// tools, tool addresses and tool contracts. It has no I/O and imports nothing
// from the rest of the engine.
package model

import (
	"encoding/json"
	"time"
)

// Source kinds.
const (
	KindStdio = "stdio" // a local command speaking MCP over stdin/stdout
	KindHTTP  = "http"  // a remote streamable-HTTP endpoint
	// KindOpenAPI is an HTTP API described by an OpenAPI 3.0/3.1 or Swagger
	// 2.0 document (Document); its tools are the document's operations,
	// called at URL, the server reviewed when it was added.
	KindOpenAPI = "openapi"
)

// Source is an upstream MCP server the person added to the hub.
type Source struct {
	Namespace string            `json:"namespace"`
	Kind      string            `json:"kind"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	URL       string            `json:"url,omitempty"`
	// Headers are sent with every request to an HTTP source (X-Region: eu);
	// never a credential, which is a connection's (SecretHeader).
	Headers map[string]string `json:"headers,omitempty"`
	AddedAt time.Time         `json:"addedAt"`
	// SecretEnv is the environment variable a stdio source reads its
	// credential from (GITHUB_PERSONAL_ACCESS_TOKEN).
	SecretEnv string `json:"secretEnv,omitempty"`
	// SecretHeader is the HTTP header a remote source reads its credential
	// from; empty means "Authorization: Bearer <secret>".
	SecretHeader string `json:"secretHeader,omitempty"`
	// Document is where an openapi source's document is read from: an
	// http(s) URL or an absolute file path.
	Document string `json:"document,omitempty"`
	// DocumentServer is the server URL the document named when the source
	// was reviewed ("" when it named none the hub could use); a document
	// that names another one later is refused until the source is added
	// again and reviewed.
	DocumentServer string `json:"documentServer,omitempty"`
	// AuthScheme, for an openapi source, says how its credential is sent
	// (the document's security scheme: "apiKey header X-API-Key", "bearer",
	// "basic"); empty when the document declares none the hub supports.
	AuthScheme string `json:"authScheme,omitempty"`
	// Auth is "oauth" when the server asked for an OAuth sign-in (a 401
	// with a Bearer challenge) when it was added: `hub auth` signs in.
	Auth string `json:"auth,omitempty"`
	// CallTimeoutMs is how long a call to one of the source's tools may
	// wait for the upstream's answer, in milliseconds; 0 means the hub's
	// default (CAPABILITIES_CALL_TIMEOUT, else 60 s).
	CallTimeoutMs int64 `json:"callTimeoutMs,omitempty"`
}

// Connection is one named credential for one source (github/work). It holds
// a reference to a secret in the secret store, never its value.
type Connection struct {
	Name      string    `json:"name"`
	SecretRef string    `json:"secretRef"`
	CreatedAt time.Time `json:"createdAt"`
	// Auth is "oauth" for a connection made by signing in (its secret is
	// the token set); empty for a static credential.
	Auth string `json:"auth,omitempty"`
	// SignIn, when set, says why the connection's tokens can no longer be
	// used (the refresh token was refused): a person must sign in again.
	SignIn string `json:"signIn,omitempty"`
}

// AuthOAuth marks a connection, or a source, that signs in with OAuth.
const AuthOAuth = "oauth"

// Connections is connections/<namespace>.json: a source's connections and
// its default one.
type Connections struct {
	Namespace string       `json:"namespace"`
	Default   string       `json:"default,omitempty"`
	Items     []Connection `json:"items"`
}

// Get returns the connection with the name ("" is the default), or nil.
func (c *Connections) Get(name string) *Connection {
	if c == nil {
		return nil
	}
	if name == "" {
		name = c.Default
	}
	for i := range c.Items {
		if c.Items[i].Name == name {
			return &c.Items[i]
		}
	}
	return nil
}

// CommandLine is the exact command a stdio source runs, shell-quoted for display.
func (s *Source) CommandLine() string {
	if s.Kind != KindStdio {
		return ""
	}
	return QuoteCommand(append([]string{s.Command}, s.Args...))
}

// Annotations are the MCP tool annotations (hints). A nil hint is absent.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Tool is one tool of a manifest, as the upstream described it, plus the
// hub's address and contract digest for it.
type Tool struct {
	// Address is namespace.tool, the tool part a JavaScript identifier.
	Address string `json:"address"`
	// Name is the tool's name upstream, used when calling it.
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	// Secured: an OpenAPI operation that requires the source's credential;
	// a call without one waits for a connection (awaiting_connection).
	Secured bool `json:"secured,omitempty"`
	// Contract is the hex SHA-256 of the tool's canonical contract (see Contract).
	Contract string `json:"contract"`
}

// Namespace is the namespace part of the tool's address.
func (t *Tool) Namespace() string {
	ns, _, _ := SplitAddress(t.Address)
	return ns
}

// Effect classifies a tool by its annotations.
type Effect string

const (
	EffectRead        Effect = "read"        // readOnlyHint: true
	EffectWrite       Effect = "write"       // not read-only, destructiveHint: false
	EffectDestructive Effect = "destructive" // anything else: the MCP default for an unannotated tool
)

// Effect reports what calling the tool may do, by its annotations and the MCP
// defaults: absent readOnlyHint means it may write; absent destructiveHint
// means it may destroy.
func (t *Tool) Effect() Effect {
	a := t.Annotations
	if a != nil && a.ReadOnlyHint != nil && *a.ReadOnlyHint {
		return EffectRead
	}
	if a != nil && a.DestructiveHint != nil && !*a.DestructiveHint {
		return EffectWrite
	}
	return EffectDestructive
}

// Manifest is a source's tool list as last fetched, cached in the store so
// that listing and search never wait on an upstream.
type Manifest struct {
	Namespace string `json:"namespace"`
	// Protocol is the MCP protocol version negotiated with the upstream.
	Protocol      string    `json:"protocol,omitempty"`
	ServerName    string    `json:"serverName,omitempty"`
	ServerVersion string    `json:"serverVersion,omitempty"`
	Instructions  string    `json:"instructions,omitempty"`
	FetchedAt     time.Time `json:"fetchedAt"`
	Tools         []Tool    `json:"tools"`
}

// Tool returns the tool with the given address, or nil.
func (m *Manifest) Tool(address string) *Tool {
	for i := range m.Tools {
		if m.Tools[i].Address == address {
			return &m.Tools[i]
		}
	}
	return nil
}

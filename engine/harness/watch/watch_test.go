package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// home is a throwaway HOME and store directory.
type home struct {
	env   harness.Env
	store string
}

func newHome(t *testing.T) home {
	t.Helper()
	d := t.TempDir()
	h := home{env: harness.Env{Home: filepath.Join(d, "home"), Getenv: func(string) string { return "" }}, store: filepath.Join(d, "hub")}
	for _, dir := range []string{h.env.Home, h.store} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h home) path(parts ...string) string {
	return filepath.Join(append([]string{h.env.Home}, parts...)...)
}

// running is a started Watcher.
type running struct {
	w    *Watcher
	stop func() // cancels Run and waits for it
}

func start(t *testing.T, h home, opts Options) running {
	t.Helper()
	opts.Dir = h.store
	w, err := New(h.env, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	// Run reads the files as they are before it watches them; a write
	// made before that would be part of the starting state. Wait until
	// the directories are watched: the watcher of a file's directory is
	// in place once a write of an unrelated file there is seen, which
	// cannot be observed; instead wait for the first read by Run, after
	// which every directory is watched.
	waitStarted(t, w)
	return running{w: w, stop: stop}
}

// waitStarted waits until Run has read the starting state.
func waitStarted(t *testing.T, w *Watcher) {
	t.Helper()
	select {
	case <-w.started:
	case <-time.After(testenv.Timeout(10 * time.Second)):
		t.Fatal("the watcher did not start")
	}
}

// next waits for the next offer.
func next(t *testing.T, r running) Offer {
	t.Helper()
	select {
	case o, ok := <-r.w.Offers():
		if !ok {
			t.Fatal("Offers closed")
		}
		return o
	case <-time.After(testenv.Timeout(10 * time.Second)):
		t.Fatal("no offer")
	}
	return Offer{}
}

// untilMarker returns the names of the offers up to and including the one
// for the server marker: what was offered for the writes made before it.
func untilMarker(t *testing.T, r running, marker string) []string {
	t.Helper()
	var names []string
	for {
		o := next(t, r)
		names = append(names, o.Server.Name)
		if o.Server.Name == marker {
			return names
		}
	}
}

func stdio(cmd string, args ...string) map[string]any {
	return map[string]any{"command": cmd, "args": args}
}

// writeJSON writes v to path in place (truncate and write, as
// harnesses writing their own JSON do).
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeRename writes data to a temporary file beside path and renames it
// over path, as editors do.
func writeRename(t *testing.T, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func claudeConfig(servers map[string]any) map[string]any {
	return map[string]any{"numStartups": 3, "mcpServers": servers}
}

// TestOffer: a server added to a harness config while the watcher runs is
// offered once, with its harness and name, whichever way the file is
// written; what the configs held at start, and a server renamed in place,
// are not offered.
func TestOffer(t *testing.T) {
	const codexBefore = "model = \"o3\"\n\n[mcp_servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/tmp\"]\n"
	tests := []struct {
		name   string
		before func(t *testing.T, h home) // the configs when the watcher starts
		write  func(t *testing.T, h home) // the change
		want   Offer                      // Harness, Title, Path (relative to HOME), Server.Name, Proposal.Namespace
	}{
		{
			name: "Claude Code, written in place, with a server renamed",
			before: func(t *testing.T, h home) {
				writeJSON(t, h.path(".claude.json"), claudeConfig(map[string]any{"old": stdio("uvx", "mcp-server-time")}))
			},
			write: func(t *testing.T, h home) {
				writeJSON(t, h.path(".claude.json"), claudeConfig(map[string]any{
					"renamed": stdio("uvx", "mcp-server-time"),
					"linear":  map[string]any{"type": "http", "url": "https://mcp.linear.app/mcp"},
				}))
			},
			want: Offer{Harness: "claude-code", Title: "Claude Code", Path: ".claude.json", Server: harness.Server{Name: "linear"}, Proposal: harness.Proposal{Namespace: "linear"}},
		},
		{
			name: "Claude Code, an SSE server beside a stdio one: only the one the hub can add",
			before: func(t *testing.T, h home) {
				writeJSON(t, h.path(".claude.json"), claudeConfig(map[string]any{"old": stdio("uvx", "mcp-server-time")}))
			},
			write: func(t *testing.T, h home) {
				writeJSON(t, h.path(".claude.json"), claudeConfig(map[string]any{
					"old":        stdio("uvx", "mcp-server-time"),
					"aaa-legacy": map[string]any{"type": "sse", "url": "http://127.0.0.1:9/sse"},
					"linear":     stdio("npx", "-y", "linear-mcp"),
				}))
			},
			want: Offer{Harness: "claude-code", Title: "Claude Code", Path: ".claude.json", Server: harness.Server{Name: "linear"}, Proposal: harness.Proposal{Namespace: "linear"}},
		},
		{
			name: "Codex, temporary file renamed over config.toml",
			before: func(t *testing.T, h home) {
				if err := os.MkdirAll(h.path(".codex"), 0o700); err != nil {
					t.Fatal(err)
				}
				writeRename(t, h.path(".codex", "config.toml"), codexBefore)
			},
			write: func(t *testing.T, h home) {
				writeRename(t, h.path(".codex", "config.toml"), codexBefore+"\n[mcp_servers.github]\ncommand = \"github-mcp-server\"\nargs = [\"stdio\"]\n")
			},
			want: Offer{Harness: "codex", Title: "Codex CLI", Path: ".codex/config.toml", Server: harness.Server{Name: "github"}, Proposal: harness.Proposal{Namespace: "github"}},
		},
		{
			name: "Codex, whose directory is removed and made again",
			before: func(t *testing.T, h home) {
				if err := os.MkdirAll(h.path(".codex"), 0o700); err != nil {
					t.Fatal(err)
				}
				writeRename(t, h.path(".codex", "config.toml"), codexBefore)
			},
			write: func(t *testing.T, h home) {
				if err := os.RemoveAll(h.path(".codex")); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(h.path(".codex"), 0o700); err != nil {
					t.Fatal(err)
				}
				writeRename(t, h.path(".codex", "config.toml"), "[mcp_servers.github]\ncommand = \"github-mcp-server\"\nargs = [\"stdio\"]\n")
			},
			want: Offer{Harness: "codex", Title: "Codex CLI", Path: ".codex/config.toml", Server: harness.Server{Name: "github"}, Proposal: harness.Proposal{Namespace: "github"}},
		},
		{
			name: "Codex, a server turned on",
			before: func(t *testing.T, h home) {
				if err := os.MkdirAll(h.path(".codex"), 0o700); err != nil {
					t.Fatal(err)
				}
				writeRename(t, h.path(".codex", "config.toml"), codexBefore+"\n[mcp_servers.github]\ncommand = \"github-mcp-server\"\nenabled = false\n")
			},
			write: func(t *testing.T, h home) {
				writeRename(t, h.path(".codex", "config.toml"), codexBefore+"\n[mcp_servers.github]\ncommand = \"github-mcp-server\"\nenabled = true\n")
			},
			want: Offer{Harness: "codex", Title: "Codex CLI", Path: ".codex/config.toml", Server: harness.Server{Name: "github"}, Proposal: harness.Proposal{Namespace: "github"}},
		},
		{
			name:   "Gemini CLI, whose directory is made after the watcher started",
			before: func(t *testing.T, h home) {},
			write: func(t *testing.T, h home) {
				if err := os.Mkdir(h.path(".gemini"), 0o700); err != nil {
					t.Fatal(err)
				}
				writeJSON(t, h.path(".gemini", "settings.json"), map[string]any{"mcpServers": map[string]any{"sentry": stdio("npx", "-y", "@sentry/mcp-server")}})
			},
			want: Offer{Harness: "gemini", Title: "Gemini CLI", Path: ".gemini/settings.json", Server: harness.Server{Name: "sentry"}, Proposal: harness.Proposal{Namespace: "sentry"}},
		},
		{
			name: "Gemini CLI, settings.json a symlink into a dotfiles folder, written through it",
			before: func(t *testing.T, h home) {
				for _, d := range []string{h.path("dotfiles", "gemini"), h.path(".gemini")} {
					if err := os.MkdirAll(d, 0o700); err != nil {
						t.Fatal(err)
					}
				}
				writeJSON(t, h.path("dotfiles", "gemini", "settings.json"), map[string]any{"theme": "dark"})
				if err := os.Symlink(filepath.Join("..", "dotfiles", "gemini", "settings.json"), h.path(".gemini", "settings.json")); err != nil {
					t.Fatal(err)
				}
			},
			write: func(t *testing.T, h home) {
				// Gemini CLI and Claude Code keep the link and write its target.
				writeJSON(t, h.path(".gemini", "settings.json"), map[string]any{"theme": "dark", "mcpServers": map[string]any{"sentry": stdio("npx", "-y", "@sentry/mcp-server")}})
			},
			want: Offer{Harness: "gemini", Title: "Gemini CLI", Path: ".gemini/settings.json", Server: harness.Server{Name: "sentry"}, Proposal: harness.Proposal{Namespace: "sentry"}},
		},
		{
			name: "Claude Code, .claude.json a symlink into a dotfiles folder, replaced there by a rename",
			before: func(t *testing.T, h home) {
				if err := os.MkdirAll(h.path("dotfiles"), 0o700); err != nil {
					t.Fatal(err)
				}
				writeJSON(t, h.path("dotfiles", "claude.json"), claudeConfig(nil))
				if err := os.Symlink(filepath.Join("dotfiles", "claude.json"), h.path(".claude.json")); err != nil {
					t.Fatal(err)
				}
			},
			write: func(t *testing.T, h home) {
				data, err := json.Marshal(claudeConfig(map[string]any{"linear": map[string]any{"type": "http", "url": "https://mcp.linear.app/mcp"}}))
				if err != nil {
					t.Fatal(err)
				}
				writeRename(t, h.path("dotfiles", "claude.json"), string(data))
			},
			want: Offer{Harness: "claude-code", Title: "Claude Code", Path: ".claude.json", Server: harness.Server{Name: "linear"}, Proposal: harness.Proposal{Namespace: "linear"}},
		},
		{
			name: "Gemini CLI, whose folder is also Cursor's, through a symlink",
			before: func(t *testing.T, h home) {
				if err := os.MkdirAll(h.path(".gemini"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(".gemini", h.path(".cursor")); err != nil {
					t.Fatal(err)
				}
			},
			write: func(t *testing.T, h home) {
				writeJSON(t, h.path(".gemini", "settings.json"), map[string]any{"mcpServers": map[string]any{"sentry": stdio("npx", "-y", "@sentry/mcp-server")}})
			},
			want: Offer{Harness: "gemini", Title: "Gemini CLI", Path: ".gemini/settings.json", Server: harness.Server{Name: "sentry"}, Proposal: harness.Proposal{Namespace: "sentry"}},
		},
		{
			name:   "Zed, whose directory and its parent are made after the watcher started",
			before: func(t *testing.T, h home) {},
			write: func(t *testing.T, h home) {
				if runtime.GOOS == "windows" {
					t.Skip("Zed keeps its settings in %APPDATA% on Windows")
				}
				if err := os.MkdirAll(h.path(".config", "zed"), 0o700); err != nil {
					t.Fatal(err)
				}
				writeRename(t, h.path(".config", "zed", "settings.json"), `{
  // Zed's settings are JSON with comments
  "context_servers": {"postgres": {"command": "postgres-mcp", "args": ["--ro"]},},
}`)
			},
			want: Offer{Harness: "zed", Title: "Zed", Path: ".config/zed/settings.json", Server: harness.Server{Name: "postgres"}, Proposal: harness.Proposal{Namespace: "postgres"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHome(t)
			tt.before(t, h)
			r := start(t, h, Options{})
			wrote := time.Now()
			tt.write(t, h)
			o := next(t, r)
			t.Logf("latency from the write to the offer: %v", time.Since(wrote).Round(time.Millisecond))
			got := Offer{Harness: o.Harness, Title: o.Title, Path: o.Path, Server: harness.Server{Name: o.Server.Name}, Proposal: harness.Proposal{Namespace: o.Proposal.Namespace}}
			want := tt.want
			want.Path = h.path(filepath.FromSlash(tt.want.Path))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("offer (-want +got):\n%s", diff)
			}
			if o.Proposal.Existing != "" {
				t.Errorf("the offer's proposal is an existing source %q", o.Proposal.Existing)
			}
			if _, _, err := o.Proposal.Request(); err != nil {
				t.Errorf("the offer's proposal makes no request: %v", err)
			}
			if !strings.Contains(o.Message(), "`"+tt.want.Server.Name+"`") || !strings.HasPrefix(o.Message(), tt.want.Title+" added") {
				t.Errorf("Message() = %q", o.Message())
			}
			// Nothing else was offered: the next offer is for the next server.
			writeJSON(t, h.path(".claude.json"), claudeConfig(map[string]any{"zz-marker": stdio("marker")}))
			if got := untilMarker(t, r, "zz-marker"); len(got) != 1 {
				t.Errorf("offered after the first offer: %q, want only the marker", got)
			}
		})
	}
}

// TestBurst: twenty writes in a row, each with the new server, make one
// offer.
func TestBurst(t *testing.T) {
	h := newHome(t)
	writeJSON(t, h.path(".claude.json"), claudeConfig(nil))
	r := start(t, h, Options{})
	wrote := time.Now()
	for i := range 20 {
		c := claudeConfig(map[string]any{"linear": map[string]any{"type": "http", "url": "https://mcp.linear.app/mcp"}})
		c["numStartups"] = i
		writeJSON(t, h.path(".claude.json"), c)
	}
	o := next(t, r)
	t.Logf("latency from the first of 20 writes to the offer: %v", time.Since(wrote).Round(time.Millisecond))
	if o.Server.Name != "linear" {
		t.Fatalf("offered %q, want linear", o.Server.Name)
	}
	writeJSON(t, h.path(".claude.json"), claudeConfig(map[string]any{
		"linear":    map[string]any{"type": "http", "url": "https://mcp.linear.app/mcp"},
		"zz-marker": stdio("marker"),
	}))
	if got := untilMarker(t, r, "zz-marker"); len(got) != 1 {
		t.Errorf("offered after the first offer: %q, want only the marker", got)
	}
}

// TestHubHasIt: a server the hub already has as a source (same command and
// arguments, another name) is not offered; the offer for another server
// gets a namespace the hub does not use.
func TestHubHasIt(t *testing.T) {
	h := newHome(t)
	writeJSON(t, h.path(".claude.json"), claudeConfig(nil))
	sources := []model.Source{
		{Namespace: "gh", Kind: model.KindStdio, Command: "github-mcp-server", Args: []string{"stdio"}},
		{Namespace: "linear", Kind: model.KindHTTP, URL: "https://elsewhere.example/mcp"},
	}
	r := start(t, h, Options{Sources: func(context.Context) ([]model.Source, error) { return sources, nil }})
	writeJSON(t, h.path(".claude.json"), claudeConfig(map[string]any{"github": stdio("github-mcp-server", "stdio")}))
	writeJSON(t, h.path(".claude.json"), claudeConfig(map[string]any{
		"github":    stdio("github-mcp-server", "stdio"),
		"linear":    map[string]any{"type": "http", "url": "https://mcp.linear.app/mcp"},
		"zz-marker": stdio("marker"),
	}))
	var got []string
	for {
		o := next(t, r)
		got = append(got, o.Server.Name+"→"+o.Proposal.Namespace)
		if o.Server.Name == "zz-marker" {
			break
		}
	}
	if diff := cmp.Diff([]string{"linear→linear2", "zz-marker→zz_marker"}, got); diff != "" {
		t.Errorf("offers, server→namespace (-want +got):\n%s", diff)
	}
}

// TestDeclined: a declined entry is not offered again, also by a new
// Watcher on the same store directory; the file that keeps it is mode 600
// and holds no value of the server's environment.
func TestDeclined(t *testing.T) {
	h := newHome(t)
	cfg := h.path(".claude.json")
	writeJSON(t, cfg, claudeConfig(nil))
	linear := stdio("linear-mcp")
	linear["env"] = map[string]any{"LINEAR_API_KEY": "lin_sekrit"}

	r := start(t, h, Options{})
	writeJSON(t, cfg, claudeConfig(map[string]any{"linear": linear}))
	o := next(t, r)
	if err := r.w.Decline(o); err != nil {
		t.Fatal(err)
	}
	r.stop()

	path := filepath.Join(h.store, DeclinedFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("%s is mode %v, want 0600", DeclinedFile, fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "lin_sekrit") {
		t.Errorf("%s holds the environment's value:\n%s", DeclinedFile, data)
	}

	// A new watcher starts from a config without it; the server comes
	// back under another name, with the next server after it.
	writeJSON(t, cfg, claudeConfig(nil))
	r = start(t, h, Options{})
	writeJSON(t, cfg, claudeConfig(map[string]any{"linear-again": linear}))
	writeJSON(t, cfg, claudeConfig(map[string]any{"linear-again": linear, "zz-marker": stdio("marker")}))
	if diff := cmp.Diff([]string{"zz-marker"}, untilMarker(t, r, "zz-marker")); diff != "" {
		t.Errorf("offers after the decline (-want +got):\n%s", diff)
	}
}

// TestHalfWritten: a config that does not parse (caught mid-write) makes no
// offer and does not stop the watcher; once it parses, its new server is
// offered.
func TestHalfWritten(t *testing.T) {
	h := newHome(t)
	cfg := h.path(".claude.json")
	writeJSON(t, cfg, claudeConfig(map[string]any{"old": stdio("old")}))
	logs := &records{}
	r := start(t, h, Options{Log: slog.New(logs)})
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"old": {"command": "old"}, "linear": {"comm`), 0o600); err != nil {
		t.Fatal(err)
	}
	logs.wait(t, "not parsed yet")
	writeJSON(t, cfg, claudeConfig(map[string]any{"old": stdio("old"), "linear": stdio("linear-mcp")}))
	if diff := cmp.Diff([]string{"linear"}, untilMarker(t, r, "linear")); diff != "" {
		t.Errorf("offers (-want +got):\n%s", diff)
	}
}

// TestStops: Run returns when its context is cancelled, closes Offers, and
// leaves no goroutine of its own or of fsnotify behind.
func TestStops(t *testing.T) {
	h := newHome(t)
	r := start(t, h, Options{})
	r.stop()
	if _, ok := <-r.w.Offers(); ok {
		t.Error("Offers delivered after Run returned")
	}
	deadline := time.Now().Add(testenv.Timeout(5 * time.Second))
	for {
		left := ours()
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines left after Run returned:\n%s", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ours is the stacks of the goroutines running this package's or
// fsnotify's code.
func ours() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "fsnotify") || strings.Contains(g, "harness/watch.(*Watcher)") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// records is a slog.Handler that keeps the messages.
type records struct {
	mu   sync.Mutex
	msgs []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Message)
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) wait(t *testing.T, part string) {
	t.Helper()
	deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
	for time.Now().Before(deadline) {
		r.mu.Lock()
		msgs := fmt.Sprint(r.msgs)
		r.mu.Unlock()
		if strings.Contains(msgs, part) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no log containing %q", part)
}

// TestOfferFilledIn: an offered server is filled in as import fills it in
// (harness.ExpandServer): adding it from the offer starts what the agent
// would start, not "${MCP_BIN}/server".
func TestOfferFilledIn(t *testing.T) {
	h := newHome(t)
	h.env.Getenv = func(k string) string {
		if k == "MCP_BIN" {
			return "/opt/mcp"
		}
		return ""
	}
	writeJSON(t, h.path(".claude.json"), claudeConfig(map[string]any{}))
	r := start(t, h, Options{})
	writeJSON(t, h.path(".claude.json"), claudeConfig(map[string]any{"tool": stdio("${MCP_BIN}/server", "--mode", "${MODE:-fast}")}))
	o := next(t, r)
	got := []string{o.Server.Command, o.Proposal.Server.Command}
	got = append(got, o.Proposal.Server.Args...)
	if diff := cmp.Diff([]string{"/opt/mcp/server", "/opt/mcp/server", "--mode", "fast"}, got); diff != "" {
		t.Errorf("offered server (-want +got):\n%s", diff)
	}
}

// TestNoOfferUnfillable: a server whose entry refers to a variable not set
// here, with no default, is not offered (Add would fail); the next one is.
func TestNoOfferUnfillable(t *testing.T) {
	h := newHome(t)
	writeJSON(t, h.path(".claude.json"), claudeConfig(map[string]any{}))
	r := start(t, h, Options{})
	writeJSON(t, h.path(".claude.json"), claudeConfig(map[string]any{"broken": stdio("node", "${NOT_SET_ANYWHERE}/server.js")}))
	writeJSON(t, h.path(".claude.json"), claudeConfig(map[string]any{"broken": stdio("node", "${NOT_SET_ANYWHERE}/server.js"), "marker": stdio("uvx", "mcp-server-time")}))
	if diff := cmp.Diff([]string{"marker"}, untilMarker(t, r, "marker")); diff != "" {
		t.Errorf("offers (-want +got):\n%s", diff)
	}
}

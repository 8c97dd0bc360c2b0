// Package harness knows where each agent harness (Claude Code, Codex,
// Cursor, …) keeps its MCP servers, and reads them. The table is one file
// per harness: adding a harness is adding one file whose init registers it.
//
// This package only reads. Writing (connect, disconnect, rollback) lives in
// engine/harness/edit and uses Files for where and what to write.
package harness

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Format is how a config file is written.
type Format string

// The formats harnesses use.
const (
	JSON  Format = "json"
	JSONC Format = "jsonc" // JSON with comments and trailing commas
	TOML  Format = "toml"
	YAML  Format = "yaml"
)

// Env is what a harness's paths are computed from. Tests give a throwaway
// home; the CLI gives the process's (FromOS).
type Env struct {
	Home   string
	Cwd    string
	Getenv func(string) string // nil: no variables set
	// LookupEnv, when set, tells a variable set empty from one not set.
	LookupEnv func(string) (string, bool)
	GOOS      string // "" is runtime.GOOS
}

// FromOS is the Env of this process.
func FromOS() (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return Env{}, err
	}
	return Env{Home: home, Cwd: cwd, Getenv: os.Getenv, LookupEnv: os.LookupEnv, GOOS: runtime.GOOS}, nil
}

func (e Env) get(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

func (e Env) goos() string {
	if e.GOOS == "" {
		return runtime.GOOS
	}
	return e.GOOS
}

// join joins path parts with the separator of the Env's system, so that
// Windows paths can be computed (and tested) anywhere.
func (e Env) join(parts ...string) string {
	if e.goos() != "windows" {
		return filepath.Join(parts...)
	}
	var kept []string
	for _, p := range parts {
		p = strings.TrimRight(strings.ReplaceAll(p, "/", `\`), `\`)
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, `\`)
}

// home is a path under the home directory.
func (e Env) home(parts ...string) string { return e.join(append([]string{e.Home}, parts...)...) }

// project is a path under the current directory ("" when there is none).
func (e Env) project(parts ...string) string {
	if e.Cwd == "" {
		return ""
	}
	return e.join(append([]string{e.Cwd}, parts...)...)
}

// xdgConfig is $XDG_CONFIG_HOME, else ~/.config.
func (e Env) xdgConfig() string {
	if d := e.get("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	return e.home(".config")
}

// appData is %APPDATA%, else ~\AppData\Roaming.
func (e Env) appData() string {
	if d := e.get("APPDATA"); d != "" {
		return d
	}
	return e.home("AppData", "Roaming")
}

// userConfig is where desktop applications keep their settings: the XDG
// config dir on Linux, ~/Library/Application Support on macOS, %APPDATA% on
// Windows.
func (e Env) userConfig(parts ...string) string {
	var base string
	switch e.goos() {
	case "darwin":
		base = e.home("Library", "Application Support")
	case "windows":
		base = e.appData()
	default:
		base = e.xdgConfig()
	}
	return e.join(append([]string{base}, parts...)...)
}

// File is one config file of a harness, and where in it the MCP servers live.
type File struct {
	Harness string
	Path    string
	Format  Format
	// ServersKey is the key path of the object of servers, name → entry
	// (["mcpServers"], ["projects", "/abs/repo", "mcpServers"]).
	ServersKey []string
	// DisabledKey, when set, is the key path of a list of server names
	// that are turned off (Claude Code's per-project disabledMcpServers).
	DisabledKey []string
	// AllowedKey, when set, is the key path of a list of the only server
	// names turned on, when the list is there (Gemini CLI's mcp.allowed).
	AllowedKey []string
	// Project is true for a file of the current directory's project.
	Project bool
	// InUserFile is true for a project's entries kept in the person's own
	// file (Claude Code's local scope in ~/.claude.json), which their agent
	// wrote; the other project files are the repository's, which whoever
	// wrote it wrote.
	InUserFile bool
	// Writable is true when connect may write its entry here; false when it
	// only prints what to add (or the file is not where connect writes).
	Writable bool
	// Vars is the variable syntax the harness fills in in its entries.
	Vars Vars
}

// Harness is one agent harness: its name and its config files.
type Harness struct {
	Name  string // as in --from and --client: "claude-code"
	Title string // as people write it: "Claude Code"
	// Connect is true when connect writes the harness's files; false when
	// it prints the entry to add and where.
	Connect bool
	// Off is how the harness turns one server off in its entry (Codex:
	// enabled = false); the zero Off means it has no such key, and
	// connect --replace moves the entry out of the file instead.
	Off   Flag
	vars  Vars
	files func(Env) []File
	// offElsewhere, when set, says where else in the user file doc than
	// beside the entry (Claude Code's per-project disabledMcpServers) the
	// server name is turned off, one reason each.
	offElsewhere func(doc map[string]any, name string) []string
	skills       func(Env) string // the skills directory, "" for none
}

// Flag is a key of a server entry and the value that turns the server off.
type Flag struct {
	Key   string
	Value bool
}

// Files lists the harness's config files for env, existing or not: user
// files first, then the current directory's project files.
func (h Harness) Files(env Env) []File {
	var out []File
	for _, f := range h.files(env) {
		if f.Path == "" {
			continue
		}
		f.Harness = h.Name
		if f.Format == "" {
			f.Format = JSON
		}
		f.Writable = h.Connect && !f.Project && f.Writable
		f.Vars = h.vars
		out = append(out, f)
	}
	return out
}

// OffElsewhere lists where the user file f (its decoded doc) turns the
// server name off for some of the agent's sessions by a list kept apart
// from the entry and from f.DisabledKey: Claude Code's disabledMcpServers
// of each project in ~/.claude.json (and the top-level one). Each reason
// says which list and how to turn the server on again; none for a project
// file or a harness without such lists.
func OffElsewhere(f File, doc map[string]any, name string) []string {
	h, ok := Lookup(f.Harness)
	if !ok || h.offElsewhere == nil || f.Project || doc == nil {
		return nil
	}
	return h.offElsewhere(doc, name)
}

// SkillsDir is where the harness keeps skills (<dir>/<name>/SKILL.md), or "".
func (h Harness) SkillsDir(env Env) string {
	if h.skills == nil {
		return ""
	}
	return h.skills(env)
}

var table []Harness

// register adds a harness to the table; each harness file calls it from init.
func register(h Harness) { table = append(table, h) }

// order is the order harnesses are listed in (registration order depends
// on file names).
var order = []string{"claude-code", "codex", "cursor", "claude-desktop", "vscode", "gemini", "windsurf", "zed", "antigravity", "hermes", "pi"}

// All returns every known harness, in a fixed order.
func All() []Harness {
	out := append([]Harness(nil), table...)
	rank := map[string]int{}
	for i, n := range order {
		rank[n] = i + 1
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank[out[i].Name], rank[out[j].Name]
		if ri == 0 {
			ri = len(order) + 1
		}
		if rj == 0 {
			rj = len(order) + 1
		}
		return ri < rj
	})
	return out
}

// Lookup returns the harness with the name.
func Lookup(name string) (Harness, bool) {
	for _, h := range table {
		if h.Name == name {
			return h, true
		}
	}
	return Harness{}, false
}

// Names lists the harness names, in All's order.
func Names() []string {
	var out []string
	for _, h := range All() {
		out = append(out, h.Name)
	}
	return out
}

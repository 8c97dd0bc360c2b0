package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/store"
)

// census is what `capabilities list` and `capabilities doctor` read of the
// agents' configs: every config file of every harness that exists, and the
// commands the hub's entries may run. It only reads.
type census struct {
	env     harness.Env
	configs []harness.Config
	bins    []string // hubBinaries: what an entry of the hub's may run
	self    string   // this binary, as connect writes it ("" when unknown)
	home    string   // this hub's home (CAPABILITIES_HOME)
}

func readCensus() (*census, error) {
	env, err := harness.FromOS()
	if err != nil {
		return nil, fmt.Errorf("finding the agents' configs: %w", err)
	}
	home, err := store.Home()
	if err != nil {
		return nil, err
	}
	self, _ := selfCommand()
	c := &census{env: env, self: self, home: home}
	c.bins = hubBinaries(filepath.Join(home, "hub", "snapshots"), self)
	c.configs = harness.Configs(env, harness.All())
	return c, nil
}

// servesThisHub reports whether a hub entry (isHubEntry) opens this hub: its
// CAPABILITIES_HOME names this hub's home, or it sets none and this hub is
// at the default place.
func (c *census) servesThisHub(s harness.Server) bool {
	if slices.Contains(s.Args, "--hub") {
		return false // connect --hub's: a hub on another machine
	}
	want := s.Env[homeVar]
	if want == "" {
		u, err := os.UserHomeDir()
		if err != nil {
			return false
		}
		want = filepath.Join(u, ".capabilities")
	}
	return samePath(want, c.home)
}

// samePath reports whether a and b name the same file: the same clean path,
// or the same file on disk (a symlink between them).
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// agentEntry is one entry of the hub's in an agent's config: which agent,
// which file, which profile it serves.
type agentEntry struct {
	Harness string `json:"harness"`
	Path    string `json:"path"`
	// Scope is "user" (the person's own config, which connect writes) or
	// "project" (the current folder's project).
	Scope   string `json:"scope"`
	Entry   string `json:"entry"`
	Profile string `json:"profile"`
	Command string `json:"command"`
	// Off says why the agent does not start the entry (it is turned off
	// in its file, or Gemini CLI does not trust this folder); none when it
	// does.
	Off []string `json:"off,omitempty"`
	// ProfileGone: the hub no longer has the entry's profile (capabilities
	// doctor says how to fix it); the entry serves nothing.
	ProfileGone bool `json:"profileGone,omitempty"`
}

// hubEntries are the entries of the hub's (isHubEntry) that serve this hub,
// in every config read.
func (c *census) hubEntries() []agentEntry {
	out := []agentEntry{}
	for _, cf := range c.configs {
		if cf.Err != nil {
			continue
		}
		for _, s := range cf.Servers {
			if !isHubEntry(s, c.bins) || !c.servesThisHub(s) {
				continue
			}
			out = append(out, agentEntry{
				Harness: cf.File.Harness, Path: cf.File.Path, Scope: scope(cf.File), Entry: s.Name,
				Profile: harness.EntryProfile(s.Args), Command: s.Command, Off: entryOff(cf, s),
			})
		}
	}
	return out
}

func scope(f harness.File) string {
	if f.Project {
		return "project"
	}
	return "user"
}

// entryOff says why the agent does not start the entry s of cf.
func entryOff(cf harness.Config, s harness.Server) []string {
	var out []string
	if why := harness.TurnedOff(cf.File, cf.Doc, s.Name); why != "" {
		out = append(out, why)
	} else if s.Disabled {
		out = append(out, "the entry turns it off")
	}
	out = append(out, harness.OffElsewhere(cf.File, cf.Doc, s.Name)...)
	if why := geminiUntrusted(cf.File); why != "" {
		out = append(out, why)
	}
	return out
}

// stackDir is $CAPABILITIES_HOME/stack, the clone of the person's stack
// repository.
func stackDir() (string, error) {
	home, err := store.Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "stack"), nil
}

// lockSlugs reads the stack's capabilities.lock loosely: every JSON object
// in it that has a "slug" is one installed capability, and the names it
// holds under "namespace", "source", "skill", "ns" or "name" (anywhere
// inside it, except in its connections, secrets, env and headers: stack
// install's wrote[].name, see docs/catalog.md) are what it installed. It maps each such name, and the slug itself, to the slug.
// No lock is an empty map; a lock that is not JSON is an error naming it.
func lockSlugs() (map[string]string, string, error) {
	dir, err := stackDir()
	if err != nil {
		return nil, "", err
	}
	path := filepath.Join(dir, "capabilities.lock")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, path, nil
	}
	if err != nil {
		return nil, path, fmt.Errorf("reading the stack's lock %s: %w", path, err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, path, fmt.Errorf("reading the stack's lock %s: %w", path, err)
	}
	out := map[string]string{}
	names := map[string]bool{"namespace": true, "source": true, "skill": true, "ns": true, "name": true}
	skip := map[string]bool{"connections": true, "secrets": true, "env": true, "headers": true}
	var collect func(v any, slug string)
	collect = func(v any, slug string) {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x["slug"].(string); ok && s != "" {
				slug = s
				if _, taken := out[s]; !taken {
					out[s] = s
				}
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if skip[k] {
					continue
				}
				if n, ok := x[k].(string); ok && names[k] && slug != "" && n != "" {
					out[n] = slug
					continue
				}
				collect(x[k], slug)
			}
		case []any:
			for _, e := range x {
				collect(e, slug)
			}
		}
	}
	collect(doc, "")
	return out, path, nil
}

// stackConnection is one connection a stack source names: the secret's
// NAME, and where the upstream reads it.
type stackConnection struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
	Env    string `json:"env,omitempty"`
	Header string `json:"header,omitempty"`
	// Auth is "oauth" for a connection made by signing in: no secret, a
	// sign-in on each machine.
	Auth string `json:"auth,omitempty"`
}

// stackSource is sources/<namespace>.json of the stack, read loosely.
type stackSource struct {
	Namespace   string
	Path        string
	Connections []stackConnection
}

// stackSources reads the stack's sources/*.json (none when there is no
// stack). A file that cannot be read is returned in bad, with why.
func stackSources() (srcs []stackSource, bad map[string]error, err error) {
	dir, err := stackDir()
	if err != nil {
		return nil, nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "sources", "*.json"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(paths)
	bad = map[string]error{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			bad[p] = err
			continue
		}
		var doc struct {
			Source struct {
				Namespace string `json:"namespace"`
			} `json:"source"`
			Connections []stackConnection `json:"connections"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			bad[p] = err
			continue
		}
		ns := doc.Source.Namespace
		if ns == "" {
			ns = strings.TrimSuffix(filepath.Base(p), ".json")
		}
		srcs = append(srcs, stackSource{Namespace: ns, Path: p, Connections: doc.Connections})
	}
	return srcs, bad, nil
}

// profileShows reports whether the profile p serves a tool of the
// namespace ns (nil: the profile is gone, it serves nothing).
func profileShows(p *hub.Profile, ns string) bool {
	if p == nil {
		return false
	}
	if p.All() {
		return true
	}
	for _, n := range p.Namespaces {
		if n == ns {
			return true
		}
	}
	for _, t := range p.Tools {
		if strings.HasPrefix(t, ns+".") {
			return true
		}
	}
	return false
}

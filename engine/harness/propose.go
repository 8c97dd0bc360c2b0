package harness

import (
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// Origin is a harness file a server was found in.
type Origin struct {
	Harness string `json:"harness"`
	Path    string `json:"path"`
	// Repo: the file is the current directory's own (.mcp.json,
	// .vscode/mcp.json…), written by whoever wrote the repository.
	Repo bool `json:"repo,omitempty"`
}

// Proposal is one server to import: the same server found in several
// harnesses (same command, args and env, or same URL) is one proposal.
type Proposal struct {
	Namespace string
	Server    Server   // as found first; Disabled only when off everywhere
	Origins   []Origin // where it was found, in the order read
	Secrets   []string // variables or headers holding plain-text credentials
	// Existing is the namespace of the hub's source that already is this
	// server ("" when it is new): it is reported, not added again.
	Existing string
}

// FromRepo reports whether the server was found only in the current
// directory's own files: starting it runs a command the person may never
// have read (a cloned repository's .mcp.json), so it is asked first.
func (p Proposal) FromRepo() bool {
	for _, o := range p.Origins {
		if !o.Repo {
			return false
		}
	}
	return len(p.Origins) > 0
}

// Propose turns what the scan found into proposals, one per distinct
// server, each with a free namespace proposed from its name the way `hub
// add` does (model.SanitizeNamespace; then its last argument, command or
// host; a number appended when taken). sources are the hub's sources.
func Propose(sc *Scan, sources []model.Source) []Proposal {
	var out []Proposal
	byKey := map[string]int{}
	for _, f := range sc.Found {
		for _, s := range f.Servers {
			if IsHub(s) {
				continue
			}
			o := Origin{Harness: f.File.Harness, Path: f.File.Path, Repo: f.File.Project && !f.File.InUserFile}
			k := key(s)
			if i, ok := byKey[k]; ok {
				p := &out[i]
				// A file read twice (a project file that is also the user's,
				// when the current directory is home) is the person's own.
				j := slices.IndexFunc(p.Origins, func(x Origin) bool { return x.Harness == o.Harness && x.Path == o.Path })
				if j < 0 {
					p.Origins = append(p.Origins, o)
				} else {
					p.Origins[j].Repo = p.Origins[j].Repo && o.Repo
				}
				p.Server.Disabled = p.Server.Disabled && s.Disabled
				continue
			}
			byKey[k] = len(out)
			out = append(out, Proposal{Server: s, Origins: []Origin{o}, Secrets: Secrets(s)})
		}
	}
	taken := map[string]bool{}
	for _, src := range sources {
		taken[src.Namespace] = true
	}
	for i := range out {
		p := &out[i]
		for _, src := range sources {
			if sameSource(p.Server, src) {
				p.Existing, p.Namespace = src.Namespace, src.Namespace
				break
			}
		}
	}
	for i := range out {
		if p := &out[i]; p.Existing == "" {
			p.Namespace = freeNamespace(p.Server, taken)
			taken[p.Namespace] = true
		}
	}
	return out
}

// Direct lists the entries of f (its bytes src) that run a server the hub
// has as a source: what connect --replace turns off, so that the agent
// reaches those servers only through the hub. The hub's own entry and
// entries already off are left out.
func Direct(f File, src []byte, sources []model.Source) ([]string, error) {
	if len(src) == 0 {
		return nil, nil
	}
	doc, err := Decode(f.Format, src)
	if err != nil {
		return nil, err
	}
	servers, _, err := Servers(f, doc)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range servers {
		if IsHub(s) || s.Disabled {
			continue
		}
		for _, src := range sources {
			if sameSource(s, src) {
				out = append(out, s.Name)
				break
			}
		}
	}
	return out, nil
}

// IsHub reports whether the entry is this hub itself (what connect
// writes): importing it would make the hub its own source.
func IsHub(s Server) bool {
	if s.Name == "capabilities" {
		return true
	}
	for i := 0; i+1 < len(s.Args); i++ {
		if s.Args[i] == "hub" && s.Args[i+1] == "serve" {
			return true
		}
	}
	return false
}

// key identifies a server across harnesses.
func key(s Server) string {
	if s.Kind == KindHTTP {
		return "http\x00" + s.URL
	}
	env := make([]string, 0, len(s.Env))
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return "stdio\x00" + s.Command + "\x00" + strings.Join(s.Args, "\x00") + "\x00\x00" + strings.Join(env, "\x00")
}

// sameSource reports whether the hub's source runs the server (its
// environment may differ: a credential moved to the keychain).
func sameSource(s Server, src model.Source) bool {
	if s.Kind == KindHTTP {
		return src.Kind == model.KindHTTP && strings.TrimRight(src.URL, "/") == strings.TrimRight(s.URL, "/")
	}
	return src.Kind == model.KindStdio && src.Command == s.Command && slices.Equal(src.Args, s.Args)
}

// freeNamespace proposes a namespace for the server that is not taken.
func freeNamespace(s Server, taken map[string]bool) string {
	cands := []string{model.SanitizeNamespace(s.Name)}
	if s.Kind == KindHTTP {
		if u, err := url.Parse(s.URL); err == nil {
			cands = append(cands, model.SanitizeNamespace(strings.Split(u.Hostname(), ".")[0]))
		}
	} else {
		for i := len(s.Args) - 1; i >= 0; i-- {
			if !strings.HasPrefix(s.Args[i], "-") {
				base := filepath.Base(strings.ReplaceAll(s.Args[i], `\`, "/"))
				cands = append(cands, model.SanitizeNamespace(strings.TrimSuffix(base, filepath.Ext(base))))
			}
		}
		cands = append(cands, model.SanitizeNamespace(filepath.Base(strings.ReplaceAll(s.Command, `\`, "/"))))
	}
	base := "source"
	for _, c := range cands {
		if c != "" && model.ValidNamespace(c) == nil {
			base = c
			break
		}
	}
	for i := 1; ; i++ {
		ns := base
		if i > 1 {
			suffix := strconv.Itoa(i)
			ns = base[:min(len(base), model.MaxNamespaceLen-len(suffix))] + suffix
		}
		if !taken[ns] {
			return ns
		}
	}
}

package harness

import (
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
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
// harnesses (see key) is one proposal.
type Proposal struct {
	Namespace string
	Server    Server   // as found first; Disabled only when off everywhere
	Origins   []Origin // where it was found, in the order read
	Secrets   []string // variables or headers holding plain-text credentials
	// Existing is the namespace of the hub's source that already is this
	// server ("" when it is new): it is reported, not added again.
	Existing string
	// ExistingNote says what the existing source lacks that the agent
	// gives the server: the project's folder to run in (sameServer's
	// source with the cwd as written).
	ExistingNote string
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
		if ns := existing(p.Server, sources); ns != "" {
			p.Existing, p.Namespace = ns, ns
			i := slices.IndexFunc(sources, func(src model.Source) bool { return src.Namespace == ns })
			if src := sources[i]; cleanDir(src.Cwd) != cleanDir(p.Server.Cwd) {
				where := "with no working directory: wherever the hub runs"
				if src.Cwd != "" {
					where = fmt.Sprintf("in %s, relative to wherever the hub runs", src.Cwd)
				}
				p.ExistingNote = fmt.Sprintf("the hub's %s was imported before import gave a project's server its folder: it runs %s, where the agent runs it in %s; to have the hub run it there, `capabilities hub remove %s` and import it again", ns, where, p.Server.Cwd, ns)
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
// has as a source (sameServer's rule): what connect --replace turns off,
// so that the agent reaches those servers only through the hub. The hub's
// own entry and entries already off are left out. Each entry is compared
// as import read it: filled in from env (ExpandServer).
func Direct(env Env, f File, src []byte, sources []model.Source) ([]string, error) {
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
		if existing(ExpandServer(env, f, s), sources) != "" {
			out = append(out, s.Name)
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

// key groups the entries of several harnesses into one proposal: the
// same command, arguments, working directory and environment, credentials
// included (two tokens are two sources, each imported with its own); or
// the same URL and headers but for the credentials (the first one found
// is imported).
func key(s Server) string {
	sh := entryShape(s)
	var b strings.Builder
	if s.Kind == KindHTTP {
		b.WriteString("http\x00" + s.URL)
	} else {
		b.WriteString("stdio\x00" + s.Command + "\x00" + strings.Join(s.Args, "\x00") + "\x00\x00" + cleanDir(s.Cwd))
		maps.Copy(sh.plain, sh.creds)
	}
	for _, k := range sortedKeys(sh.plain) {
		b.WriteString("\x00\x00" + k + "=" + sh.plain[k])
	}
	return b.String()
}

// shape is what of a server's environment (stdio) or headers (HTTP) says
// which server it is: the values that are not credentials, and the names
// of those that are. A credential's value is a connection (the same
// server, reached as someone else), not another server.
type shape struct {
	plain map[string]string // compared by value
	creds map[string]string // compared by name; the value as written
}

// credentialEnv reports whether the variable's value is the server's
// credential: one written in plain text (import moves it into the
// keychain), or only a reference to one in a variable named like a
// credential (${GITHUB_TOKEN}: import makes the variable the source's
// SecretEnv).
func credentialEnv(name, value string) bool {
	return model.PlainCredential(name, value) || (model.CredentialName(name) && model.OnlyReference(strings.TrimSpace(value)))
}

// headerShape sorts headers the way import carries them over: a plain-text
// credential is the source's connection; a value the harness fills in
// (${TOKEN}) and an Authorization header that is not a credential in plain
// text are left out (the hub cannot send them), so they are not compared;
// the others are sent as written. Header names are compared in lower case.
func headerShape(h map[string]string, sh *shape) {
	for k, v := range h {
		switch lk := strings.ToLower(k); {
		case model.PlainCredential(k, v):
			sh.creds[lk] = v
		case model.IsReference(v) || lk == "authorization":
		default:
			sh.plain[lk] = v
		}
	}
}

// entryShape is the shape of a harness entry. A value filled in from a
// variable named like a credential (Server.FromSecret) is one too: import
// moved it into the keychain.
func entryShape(s Server) shape {
	sh := shape{plain: map[string]string{}, creds: map[string]string{}}
	if s.Kind == KindHTTP {
		headerShape(s.Headers, &sh)
		for k := range s.FromSecret {
			if lk := strings.ToLower(k); sh.plain[lk] != "" {
				delete(sh.plain, lk)
				sh.creds[lk] = s.Headers[k]
			}
		}
		return sh
	}
	for k, v := range s.Env {
		if credentialEnv(k, v) || s.FromSecret[k] != "" {
			sh.creds[k] = v
		} else {
			sh.plain[k] = v
		}
	}
	return sh
}

// sourceShape is the shape of a hub's source: its credential variable or
// header (SecretEnv, SecretHeader) is one, whose value the keychain holds.
func sourceShape(src model.Source) shape {
	sh := shape{plain: map[string]string{}, creds: map[string]string{}}
	if src.Kind == model.KindHTTP {
		headerShape(src.Headers, &sh)
		if src.SecretHeader != "" {
			sh.creds[strings.ToLower(src.SecretHeader)] = ""
		}
		return sh
	}
	for k, v := range src.Env {
		if k == src.SecretEnv || credentialEnv(k, v) {
			sh.creds[k] = v
		} else {
			sh.plain[k] = v
		}
	}
	if src.SecretEnv != "" {
		sh.creds[src.SecretEnv] = src.Env[src.SecretEnv]
	}
	return sh
}

// sameServer reports whether the hub's source runs the harness's entry:
// the same command, arguments, working directory and environment but for
// the credentials (stdio), or the same URL (a trailing slash aside) and
// headers but for the credentials (HTTP). A credential is compared by
// name, not by value: each one the entry holds (GITHUB_TOKEN=ghp_…, or
// =${GITHUB_TOKEN}; Authorization: Bearer …) is one the source takes in
// the same variable or header (an HTTP source takes its credential in
// Authorization unless it names another header). The source may take one
// the entry does not set (the agent's environment, or a sign-in, provides
// it). exact is also set when the two name the same credentials and the
// same URL, byte for byte: of several sources that run the entry, the
// exact one is the entry's. A project's entry whose working directory
// import gave it (Server.CwdFromProject) is also run by a source that has
// the cwd as the entry wrote it (none, or relative: what import added
// before it did so), never exactly.
func sameServer(s Server, src model.Source) (same, exact bool) {
	es, ss := entryShape(s), sourceShape(src)
	asWritten := false // the source runs the entry in its cwd as written (oldCwd)
	switch {
	case s.Kind == KindHTTP && src.Kind == model.KindHTTP:
		if strings.TrimRight(src.URL, "/") != strings.TrimRight(s.URL, "/") {
			return false, false
		}
	case s.Kind == KindStdio && src.Kind == model.KindStdio:
		if src.Command != s.Command || !slices.Equal(src.Args, s.Args) {
			return false, false
		}
		if cleanDir(src.Cwd) != cleanDir(s.Cwd) {
			if !oldCwd(s, src) {
				return false, false
			}
			asWritten = true
		}
	default:
		return false, false
	}
	if !maps.Equal(es.plain, ss.plain) {
		return false, false
	}
	exact = src.URL == s.URL && !asWritten
	bearer := src.Kind == model.KindHTTP && src.SecretHeader == ""
	for k := range es.creds {
		if _, ok := ss.creds[k]; !ok && (!bearer || k != "authorization") {
			return false, false
		}
	}
	for k := range ss.creds {
		if _, ok := es.creds[k]; !ok {
			exact = false
		}
	}
	return true, exact
}

// oldCwd reports whether the source runs the project's entry s with its
// working directory as the entry wrote it (none, or relative), as import
// added it before it gave such a server the project's folder
// (CwdFromProject).
func oldCwd(s Server, src model.Source) bool {
	return s.CwdFromProject && cleanDir(src.Cwd) == cleanDir(s.CwdWritten)
}

// existing is the namespace of the hub's source that runs the entry (the
// exact one when several do; see sameServer), "" when none does.
func existing(s Server, sources []model.Source) string {
	ns := ""
	for _, src := range sources {
		same, exact := sameServer(s, src)
		if exact {
			return src.Namespace
		}
		if same && ns == "" {
			ns = src.Namespace
		}
	}
	return ns
}

// cleanDir is a working directory as compared: "" (none) stays "".
func cleanDir(d string) string {
	if d == "" {
		return ""
	}
	return filepath.Clean(d)
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
		if c != "" && model.NewNamespace(c) == nil {
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

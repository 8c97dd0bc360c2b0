// Package stack keeps a person's capabilities in a git repository they own
// (the stack) and carries them to every machine: it exports the hub's
// state (sources with the names of the secrets they need, never a value;
// policy rules; profiles; skills) into the stack directory's files, reads
// them back, plans a three-way change set (the commit last synced, this
// machine's hub, the repository) and applies what a person accepts
// through the hub's own API. Git is the git binary (Git).
package stack

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/skill"
)

// maxFile is the largest file the stack reader accepts.
const maxFile = 8 << 20

// Source is a source as the stack holds it: model.Source without the time
// it was added (a machine's, not the person's).
type Source struct {
	Namespace      string            `json:"namespace"`
	Kind           string            `json:"kind"`
	Command        string            `json:"command,omitempty"`
	Args           []string          `json:"args,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Cwd            string            `json:"cwd,omitempty"`
	URL            string            `json:"url,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	SecretEnv      string            `json:"secretEnv,omitempty"`
	SecretHeader   string            `json:"secretHeader,omitempty"`
	Document       string            `json:"document,omitempty"`
	DocumentServer string            `json:"documentServer,omitempty"`
	AuthScheme     string            `json:"authScheme,omitempty"`
	Auth           string            `json:"auth,omitempty"`
	CallTimeoutMs  int64             `json:"callTimeoutMs,omitempty"`
}

// FromModel is src as the stack holds it.
func FromModel(s model.Source) Source {
	return Source{Namespace: s.Namespace, Kind: s.Kind, Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd, URL: s.URL,
		Headers: s.Headers, SecretEnv: s.SecretEnv, SecretHeader: s.SecretHeader, Document: s.Document,
		DocumentServer: s.DocumentServer, AuthScheme: s.AuthScheme, Auth: s.Auth, CallTimeoutMs: s.CallTimeoutMs}
}

// Model is s as the hub stores it (AddedAt left for the caller).
func (s Source) Model() model.Source {
	return model.Source{Namespace: s.Namespace, Kind: s.Kind, Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd, URL: s.URL,
		Headers: s.Headers, SecretEnv: s.SecretEnv, SecretHeader: s.SecretHeader, Document: s.Document,
		DocumentServer: s.DocumentServer, AuthScheme: s.AuthScheme, Auth: s.Auth, CallTimeoutMs: s.CallTimeoutMs}
}

// Connection names one connection of a source and the secret it needs: by
// name (the environment variable it is found in on any machine), and where
// the upstream reads it (Env for a local command, Header for a remote
// server). Never a value.
type Connection struct {
	Name   string `json:"name"`
	Secret string `json:"secret,omitempty"`
	Env    string `json:"env,omitempty"`
	Header string `json:"header,omitempty"`
	// Auth is "oauth" for a connection made by signing in: it needs no
	// secret, a sign-in on each machine (`capabilities hub auth`).
	Auth string `json:"auth,omitempty"`
}

// SourceFile is sources/<namespace>.json.
type SourceFile struct {
	Source      Source       `json:"source"`
	Connections []Connection `json:"connections"`
}

// Rule is one rule of policy.json. A tool rule is not pinned to a contract
// here: the contract is what this machine's hub lists and a person
// reviews, never one pulled.
type Rule struct {
	Target     string        `json:"target"`
	Connection string        `json:"connection,omitempty"`
	Action     policy.Action `json:"action"`
}

// Key identifies the rule: its target and connection.
func (r Rule) Key() string {
	if r.Connection == "" {
		return r.Target
	}
	return r.Target + " (connection " + r.Connection + ")"
}

// PolicyFile is policy.json.
type PolicyFile struct {
	Rules []Rule `json:"rules"`
}

// GitSkill is skills/<name>.json: a skill from a git repository, pinned to
// a commit.
type GitSkill struct {
	Repo   string `json:"repo"`
	Commit string `json:"commit"`
	Path   string `json:"path,omitempty"`
}

// Skill is a skill of the stack: its files (skills/<name>/…), or a git
// skill pinned to a commit.
type Skill struct {
	Name  string
	Git   *GitSkill
	Files map[string][]byte // slash path relative to the skill's folder
}

// State is what the stack holds, by name.
type State struct {
	Sources  map[string]SourceFile
	Rules    map[string]Rule // by Rule.Key
	Profiles map[string]hub.Profile
	Skills   map[string]Skill
}

// NewState is an empty state.
func NewState() *State {
	return &State{Sources: map[string]SourceFile{}, Rules: map[string]Rule{}, Profiles: map[string]hub.Profile{}, Skills: map[string]Skill{}}
}

// Owned reports whether a stack path is one Render writes (and so one a
// push replaces): sources/, profiles/, skills/ and policy.json. Other
// files (capabilities.lock, a README) are left as they are.
func Owned(p string) bool {
	return p == "policy.json" || strings.HasPrefix(p, "sources/") || strings.HasPrefix(p, "profiles/") || strings.HasPrefix(p, "skills/")
}

// Render is the state as the stack's files, by slash path.
func (s *State) Render() (map[string][]byte, error) {
	out := map[string][]byte{}
	put := func(p string, v any) error {
		b, err := marshal(v)
		if err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
		out[p] = b
		return nil
	}
	for ns, sf := range s.Sources {
		if err := put("sources/"+ns+".json", sf); err != nil {
			return nil, err
		}
	}
	rules := make([]Rule, 0, len(s.Rules))
	for _, r := range s.Rules {
		rules = append(rules, r)
	}
	sortRules(rules)
	if err := put("policy.json", PolicyFile{Rules: rules}); err != nil {
		return nil, err
	}
	for name, p := range s.Profiles {
		if err := put("profiles/"+name+".json", p); err != nil {
			return nil, err
		}
	}
	for name, sk := range s.Skills {
		if sk.Git != nil {
			if err := put("skills/"+name+".json", sk.Git); err != nil {
				return nil, err
			}
			continue
		}
		for f, data := range sk.Files {
			out["skills/"+name+"/"+f] = data
		}
	}
	return out, nil
}

func sortRules(rules []Rule) {
	sort.Slice(rules, func(i, j int) bool {
		if rules[i].Target != rules[j].Target {
			return rules[i].Target < rules[j].Target
		}
		return rules[i].Connection < rules[j].Connection
	})
}

// marshal is v as indented JSON with a final newline: the stack's files
// are read and diffed by people.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// FileError is a stack file that cannot be read: which, and why.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string {
	return fmt.Sprintf("%s in the stack: %v; fix the file in the stack repository", e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

var (
	hex40     = regexp.MustCompile(`^[0-9a-f]{40}$`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerRE  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// Read reads the stack's files from fsys (a work tree or a commit's tree).
// Files it does not own (capabilities.lock, a README) are not read. Any
// malformed file is an error naming it; nothing is returned then.
func Read(fsys fs.FS) (*State, error) {
	s := NewState()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &FileError{Path: p, Err: err}
		}
		if d.IsDir() {
			if p == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		if !Owned(p) {
			return nil
		}
		if !d.Type().IsRegular() {
			return &FileError{Path: p, Err: errors.New("not a plain file (a symbolic link?); the stack holds plain files only")}
		}
		data, err := readLimited(fsys, p)
		if err != nil {
			return &FileError{Path: p, Err: err}
		}
		if err := s.add(p, data); err != nil {
			return &FileError{Path: p, Err: err}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for name, sk := range s.Skills {
		if sk.Git == nil {
			if _, ok := sk.Files["SKILL.md"]; !ok {
				return nil, &FileError{Path: "skills/" + name, Err: errors.New("the skill's folder has no SKILL.md")}
			}
			if _, _, _, err := skill.Parse(sk.Files["SKILL.md"]); err != nil {
				return nil, &FileError{Path: "skills/" + name + "/SKILL.md", Err: err}
			}
		}
	}
	return s, nil
}

func readLimited(fsys fs.FS, p string) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("larger than %d MB", maxFile>>20)
	}
	return b, nil
}

// decodeStrict decodes one JSON value, refusing unknown fields and
// anything after it.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not valid JSON for this file: %w", err)
	}
	if dec.More() {
		return errors.New("not valid JSON for this file: more than one value")
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("not valid JSON for this file: text after the value")
	}
	return nil
}

func (s *State) add(p string, data []byte) error {
	dir, file := path.Split(p)
	switch {
	case p == "policy.json":
		var pf PolicyFile
		if err := decodeStrict(data, &pf); err != nil {
			return err
		}
		for i, r := range pf.Rules {
			if err := checkRule(r); err != nil {
				return fmt.Errorf("rule %d: %w", i+1, err)
			}
			if _, dup := s.Rules[r.Key()]; dup {
				return fmt.Errorf("rule %d: a second rule for %s", i+1, r.Key())
			}
			s.Rules[r.Key()] = r
		}
	case dir == "sources/":
		ns, ok := strings.CutSuffix(file, ".json")
		if !ok {
			return errors.New("not a source file: sources/ holds <namespace>.json files")
		}
		var sf SourceFile
		if err := decodeStrict(data, &sf); err != nil {
			return err
		}
		if err := checkSource(ns, &sf); err != nil {
			return err
		}
		s.Sources[ns] = sf
	case dir == "profiles/":
		name, ok := strings.CutSuffix(file, ".json")
		if !ok {
			return errors.New("not a profile file: profiles/ holds <name>.json files")
		}
		var pr hub.Profile
		if err := decodeStrict(data, &pr); err != nil {
			return err
		}
		if err := hub.ValidProfileName(name); err != nil {
			return err
		}
		if pr.Name != name {
			return fmt.Errorf("its name is %q, not %q as the file is called", pr.Name, name)
		}
		if pr.Mode != hub.ModeCode && pr.Mode != hub.ModeDirect {
			return fmt.Errorf("mode %q: use %q or %q", pr.Mode, hub.ModeCode, hub.ModeDirect)
		}
		s.Profiles[name] = pr
	case dir == "skills/":
		name, ok := strings.CutSuffix(file, ".json")
		if !ok {
			return errors.New("not a skill: skills/ holds <name>/ folders and <name>.json git skills")
		}
		if err := skill.CheckName(name); err != nil {
			return err
		}
		var g GitSkill
		if err := decodeStrict(data, &g); err != nil {
			return err
		}
		if g.Repo == "" || strings.HasPrefix(g.Repo, "-") {
			return errors.New(`"repo" must name the skill's git repository`)
		}
		if !hex40.MatchString(g.Commit) {
			return fmt.Errorf(`"commit" %q must be a full commit (40 hex digits)`, g.Commit)
		}
		if g.Path != "" && (path.IsAbs(g.Path) || slices.Contains(strings.Split(g.Path, "/"), "..")) {
			return fmt.Errorf(`"path" %q must be a folder inside the repository`, g.Path)
		}
		if sk, dup := s.Skills[name]; dup && sk.Git == nil {
			return fmt.Errorf("skill %s is both a folder and a git skill", name)
		}
		s.Skills[name] = Skill{Name: name, Git: &g}
	case strings.HasPrefix(p, "skills/"):
		rest := strings.TrimPrefix(p, "skills/")
		name, f, _ := strings.Cut(rest, "/")
		if err := skill.CheckName(name); err != nil {
			return err
		}
		sk, ok := s.Skills[name]
		if ok && sk.Git != nil {
			return fmt.Errorf("skill %s is both a folder and a git skill", name)
		}
		if !ok {
			sk = Skill{Name: name, Files: map[string][]byte{}}
		}
		if len(sk.Files) >= skill.MaxFiles {
			return fmt.Errorf("skill %s holds more than %d files", name, skill.MaxFiles)
		}
		sk.Files[f] = data
		s.Skills[name] = sk
	default:
		return errors.New("not a file of the stack: it holds sources/<namespace>.json, policy.json, profiles/<name>.json and skills/")
	}
	return nil
}

func checkRule(r Rule) error {
	if r.Target == "" {
		return errors.New(`"target" is empty: name a namespace or a tool address`)
	}
	if _, err := policy.ParseAction(string(r.Action)); err != nil || string(r.Action) != strings.ToLower(string(r.Action)) {
		return fmt.Errorf("action %q: use allow, ask or deny", r.Action)
	}
	ns, _, isTool := model.SplitAddress(r.Target)
	if !isTool {
		ns = r.Target
	}
	if err := model.ValidNamespace(ns); err != nil {
		return fmt.Errorf("target %q: %w", r.Target, err)
	}
	return nil
}

func checkSource(ns string, sf *SourceFile) error {
	src := &sf.Source
	if err := model.ValidNamespace(ns); err != nil {
		return err
	}
	if src.Namespace != ns {
		return fmt.Errorf("its namespace is %q, not %q as the file is called", src.Namespace, ns)
	}
	switch src.Kind {
	case model.KindStdio:
		if src.Command == "" {
			return errors.New("a stdio source needs a command")
		}
	case model.KindHTTP:
		if !strings.HasPrefix(src.URL, "http://") && !strings.HasPrefix(src.URL, "https://") {
			return fmt.Errorf("url %q: an http source needs an http(s) URL", src.URL)
		}
	case model.KindOpenAPI:
		if src.Document == "" {
			return errors.New("an openapi source needs its document")
		}
	default:
		return fmt.Errorf("kind %q: use stdio, http or openapi", src.Kind)
	}
	if src.SecretEnv != "" && !envNameRE.MatchString(src.SecretEnv) {
		return fmt.Errorf("secretEnv %q is not an environment variable name", src.SecretEnv)
	}
	if src.SecretHeader != "" && !headerRE.MatchString(src.SecretHeader) {
		return fmt.Errorf("secretHeader %q is not a header name", src.SecretHeader)
	}
	seen := map[string]bool{}
	for i, c := range sf.Connections {
		if c.Name == "" || seen[c.Name] {
			return fmt.Errorf("connection %d: a missing or repeated name %q", i+1, c.Name)
		}
		seen[c.Name] = true
		if c.Auth == model.AuthOAuth {
			continue
		}
		if c.Auth != "" {
			return fmt.Errorf("connection %s: auth %q: only %q", c.Name, c.Auth, model.AuthOAuth)
		}
		if !envNameRE.MatchString(c.Secret) {
			return fmt.Errorf("connection %s: secret %q must be a secret's name (letters, digits, _), never its value", c.Name, c.Secret)
		}
		if c.Env != "" && !envNameRE.MatchString(c.Env) {
			return fmt.Errorf("connection %s: env %q is not an environment variable name", c.Name, c.Env)
		}
		if c.Header != "" && !headerRE.MatchString(c.Header) {
			return fmt.Errorf("connection %s: header %q is not a header name", c.Name, c.Header)
		}
	}
	return nil
}

// Sum is a digest of what the stack holds for one item: equal sums, the
// same item.
func sum(v any) string {
	h := sha256.New()
	switch x := v.(type) {
	case Skill:
		if x.Git != nil {
			b, _ := json.Marshal(x.Git)
			h.Write([]byte("git\x00"))
			h.Write(b)
			break
		}
		names := make([]string, 0, len(x.Files))
		for f := range x.Files {
			names = append(names, f)
		}
		sort.Strings(names)
		for _, f := range names {
			fmt.Fprintf(h, "%s\x00%d\x00", f, len(x.Files[f]))
			h.Write(x.Files[f])
		}
	case SourceFile:
		// Connections in any order are the same connections.
		c := slices.Clone(x.Connections)
		sort.Slice(c, func(i, j int) bool { return c[i].Name < c[j].Name })
		x.Connections = c
		b, _ := json.Marshal(x)
		h.Write(b)
	case hub.Profile:
		x.Namespaces = sortedCopy(x.Namespaces)
		x.Tools = sortedCopy(x.Tools)
		x.Skills = sortedCopy(x.Skills)
		b, _ := json.Marshal(x)
		h.Write(b)
	default:
		b, _ := json.Marshal(x)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sortedCopy(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	c := slices.Clone(s)
	sort.Strings(c)
	return slices.Compact(c)
}

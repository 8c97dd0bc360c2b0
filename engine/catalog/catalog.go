// Package catalog reads the catalog capabilities are installed from (a
// folder or an http(s) URL holding index.json: capabilities by slug, each
// of one of three shapes) and the lockfile that records what
// `capabilities stack install` installed, pinned, and what it wrote where
// (capabilities.lock).
//
// A catalog grants nothing: it says where a capability is and which
// version, commit or URL to take. The hub lists a server's tools itself
// and they go through its review like any other source's.
package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// Shape is what kind of capability an entry is.
type Shape string

// The three shapes.
const (
	// ShapeNPM is a local MCP server published on npm, run over stdio
	// with npx at the pinned version.
	ShapeNPM Shape = "npm"
	// ShapeRemote is a remote MCP server reached over streamable HTTP.
	ShapeRemote Shape = "remote"
	// ShapeSkill is a skill (a SKILL.md folder) in a git repository,
	// pinned to a commit.
	ShapeSkill Shape = "skill"
)

// IndexFile is the catalog's file in its folder or at its URL.
const IndexFile = "index.json"

// FormatVersion is the version of index.json and capabilities.lock this
// package reads and writes.
const FormatVersion = 1

// MaxIndexBytes is the largest index.json read.
const MaxIndexBytes = 4 << 20

// Entry is one capability of the catalog.
type Entry struct {
	Slug        string `json:"slug"`
	Shape       Shape  `json:"shape"`
	Description string `json:"description,omitempty"`
	// Namespace is the hub namespace a server is added under (default:
	// the slug, its hyphens as underscores).
	Namespace string `json:"namespace,omitempty"`

	// npm: the package, its exact version, and optionally the integrity
	// the npm registry gives for that version (dist.integrity).
	Package   string   `json:"package,omitempty"`
	Version   string   `json:"version,omitempty"`
	Integrity string   `json:"integrity,omitempty"`
	Args      []string `json:"args,omitempty"` // after the package, for npm

	// remote: the server's streamable-HTTP URL.
	URL string `json:"url,omitempty"`

	// skill: the repository (a URL, or a path on this machine), the full
	// commit it is pinned to, and the folder in it that holds SKILL.md
	// ("" for the top).
	Repo   string `json:"repo,omitempty"`
	Commit string `json:"commit,omitempty"`
	Path   string `json:"path,omitempty"`

	// Secrets are the names of the credentials a server needs (at most
	// one: the hub gives a server one credential per connection). For an
	// npm server the name is the environment variable it reads; a remote
	// server gets it in SecretHeader (default Authorization: Bearer).
	Secrets      []string `json:"secrets,omitempty"`
	SecretHeader string   `json:"secretHeader,omitempty"`
}

// Index is index.json.
type Index struct {
	Version      int     `json:"version"`
	Capabilities []Entry `json:"capabilities"`
}

// Catalog is an index and where it was read from.
type Catalog struct {
	Index
	Location string // the folder or URL, as given
}

var (
	slugRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	npmNameRE = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)
	// An exact semantic version: what npm installs, never a range or tag.
	semverRE    = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	integrityRE = regexp.MustCompile(`^sha(256|384|512)-[A-Za-z0-9+/]+={0,2}$`)
	commitRE    = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	secretRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	headerRE    = regexp.MustCompile(`^[!#$%&'*+.^_` + "`" + `|~0-9A-Za-z-]+$`)
)

// Parse decodes and checks index.json. Every error says where (the field,
// or the entry by its place and slug) and how to fix it.
func Parse(data []byte) (*Index, error) {
	if len(data) > MaxIndexBytes {
		return nil, fmt.Errorf("index.json is %d bytes; the most read is %d", len(data), MaxIndexBytes)
	}
	var ix Index
	if err := decodeStrict(data, &ix); err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	if ix.Version != FormatVersion {
		return nil, fmt.Errorf("index.json: \"version\" is %d; this capabilities reads version %d (write \"version\": %d)", ix.Version, FormatVersion, FormatVersion)
	}
	if ix.Capabilities == nil {
		return nil, fmt.Errorf("index.json: no \"capabilities\" list (write \"capabilities\": [ … ])")
	}
	seen := map[string]int{}
	for i := range ix.Capabilities {
		e := &ix.Capabilities[i]
		if err := e.Check(); err != nil {
			return nil, fmt.Errorf("index.json: %s: %w", where(i, e.Slug), err)
		}
		if j, dup := seen[e.Slug]; dup {
			return nil, fmt.Errorf("index.json: %s: the slug %q is also capabilities[%d]'s; each slug names one capability", where(i, e.Slug), e.Slug, j)
		}
		seen[e.Slug] = i
	}
	return &ix, nil
}

func where(i int, slug string) string {
	if slug == "" {
		return fmt.Sprintf("capabilities[%d]", i)
	}
	return fmt.Sprintf("capabilities[%d] (%q)", i, slug)
}

// decodeStrict decodes one JSON value into v: no unknown field, nothing
// after it; a syntax error says its line and column.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			line, col := lineCol(data, syn.Offset-1)
			return fmt.Errorf("line %d, column %d: %w", line, col, err)
		case errors.As(err, &typ):
			line, col := lineCol(data, typ.Offset-1)
			return fmt.Errorf("line %d, column %d: %q should be %s, not a JSON %s", line, col, typ.Field, typ.Type, typ.Value)
		case errors.Is(err, io.EOF):
			return errors.New("empty: write a JSON object")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return errors.New("ends in the middle of a JSON value")
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		line, col := lineCol(data, dec.InputOffset()-1)
		return fmt.Errorf("line %d, column %d: more after the JSON object", line, col)
	}
	return nil
}

// lineCol is the 1-based line and column of the byte at off in data. off
// is the character at fault, or whitespace after it (the decoder may have
// read on to the next line), which is skipped back over.
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	for off > 0 && off < int64(len(data)) && strings.ContainsRune(" \t\r\n", rune(data[off])) {
		off--
	}
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// Check says what is wrong with an entry, or nil.
func (e *Entry) Check() error {
	if !slugRE.MatchString(e.Slug) {
		return fmt.Errorf("slug %q: use 1 to 64 lowercase letters, digits and hyphens, starting with a letter or digit", e.Slug)
	}
	if e.Namespace != "" {
		if err := model.NewNamespace(e.Namespace); err != nil {
			return fmt.Errorf("\"namespace\": %w", err)
		}
	}
	for _, s := range e.Secrets {
		if !secretRE.MatchString(s) {
			return fmt.Errorf("secret name %q: use letters, digits and _, not starting with a digit (an environment variable's name, e.g. GITHUB_TOKEN)", s)
		}
	}
	if len(e.Secrets) > 1 {
		return fmt.Errorf("\"secrets\" lists %d names (%s): the hub gives a server one credential per connection; list one", len(e.Secrets), strings.Join(e.Secrets, ", "))
	}
	// not reports a field the shape does not take.
	not := func(field, value string) error {
		if value != "" {
			return fmt.Errorf("%q is not for a %s capability (shape %q); remove it", field, e.Shape, e.Shape)
		}
		return nil
	}
	switch e.Shape {
	case ShapeNPM:
		if e.Package == "" {
			return errors.New("an npm capability needs \"package\", the npm package that runs the server (e.g. @modelcontextprotocol/server-memory)")
		}
		if len(e.Package) > 214 || !npmNameRE.MatchString(e.Package) {
			return fmt.Errorf("\"package\" %q is not an npm package name (lowercase, optionally @scope/name)", e.Package)
		}
		if e.Version == "" {
			return fmt.Errorf("an npm capability needs \"version\", the exact version to run (e.g. \"2026.8.31\"): a catalog pins what it installs")
		}
		if !semverRE.MatchString(e.Version) {
			return fmt.Errorf("\"version\" %q is not an exact version (MAJOR.MINOR.PATCH): a range or a tag would install whatever is newest", e.Version)
		}
		if e.Integrity != "" && !integrityRE.MatchString(e.Integrity) {
			return fmt.Errorf("\"integrity\" %q is not a subresource integrity string (sha512-<base64>, as npm's dist.integrity)", e.Integrity)
		}
		for i, a := range e.Args {
			if strings.ContainsRune(a, 0) {
				return fmt.Errorf("\"args\"[%d] holds a NUL byte", i)
			}
		}
		for _, f := range [][2]string{{"url", e.URL}, {"repo", e.Repo}, {"commit", e.Commit}, {"path", e.Path}, {"secretHeader", e.SecretHeader}} {
			if err := not(f[0], f[1]); err != nil {
				return err
			}
		}
	case ShapeRemote:
		if e.URL == "" {
			return errors.New("a remote capability needs \"url\", the server's streamable-HTTP endpoint (e.g. https://mcp.example.com/mcp)")
		}
		u, err := url.Parse(e.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("\"url\" %q is not an http(s) URL", e.URL)
		}
		if u.User != nil {
			return fmt.Errorf("\"url\" holds a user or password (%s@): a catalog holds no credential; list the secret's name in \"secrets\"", u.User.Username())
		}
		if e.SecretHeader != "" && !headerRE.MatchString(e.SecretHeader) {
			return fmt.Errorf("\"secretHeader\" %q is not an HTTP header name", e.SecretHeader)
		}
		if e.SecretHeader != "" && len(e.Secrets) == 0 {
			return errors.New("\"secretHeader\" says where a secret goes, but \"secrets\" names none")
		}
		for _, f := range [][2]string{{"package", e.Package}, {"version", e.Version}, {"integrity", e.Integrity}, {"repo", e.Repo}, {"commit", e.Commit}, {"path", e.Path}} {
			if err := not(f[0], f[1]); err != nil {
				return err
			}
		}
		if len(e.Args) > 0 {
			return not("args", "x")
		}
	case ShapeSkill:
		if e.Repo == "" {
			return errors.New("a skill capability needs \"repo\", the git repository that holds it (a URL or a path)")
		}
		if strings.HasPrefix(e.Repo, "-") || strings.ContainsAny(e.Repo, "\x00\n\r") {
			return fmt.Errorf("\"repo\" %q is not a git repository URL or path", e.Repo)
		}
		if e.Commit == "" {
			return errors.New("a skill capability needs \"commit\", the full commit (40 hex digits) it is pinned to")
		}
		if !commitRE.MatchString(e.Commit) {
			return fmt.Errorf("\"commit\" %q is not a full commit: write all 40 (or 64) lowercase hex digits, never a branch or a tag", e.Commit)
		}
		if e.Path != "" {
			clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(e.Path)))
			if filepath.IsAbs(e.Path) || strings.HasPrefix(e.Path, "/") || clean == ".." || strings.HasPrefix(clean, "../") || clean != e.Path {
				return fmt.Errorf("\"path\" %q: write the skill's folder relative to the repository's top, slash-separated, with no .. (e.g. skills/pdf-forms)", e.Path)
			}
		}
		if len(e.Secrets) > 0 {
			return errors.New("a skill runs nothing and takes no secret; remove \"secrets\"")
		}
		for _, f := range [][2]string{{"package", e.Package}, {"version", e.Version}, {"integrity", e.Integrity}, {"url", e.URL}, {"namespace", e.Namespace}, {"secretHeader", e.SecretHeader}} {
			if err := not(f[0], f[1]); err != nil {
				return err
			}
		}
		if len(e.Args) > 0 {
			return not("args", "x")
		}
	case "":
		return fmt.Errorf("no \"shape\": write %q (a local MCP server from npm), %q (a remote MCP server) or %q (a git skill)", ShapeNPM, ShapeRemote, ShapeSkill)
	default:
		return fmt.Errorf("shape %q: write %q (a local MCP server from npm), %q (a remote MCP server) or %q (a git skill)", e.Shape, ShapeNPM, ShapeRemote, ShapeSkill)
	}
	return nil
}

// HubNamespace is the namespace a server entry is added under.
func (e *Entry) HubNamespace() string {
	if e.Namespace != "" {
		return e.Namespace
	}
	ns := strings.ReplaceAll(e.Slug, "-", "_")
	if ns == "" || ns[0] < 'a' || ns[0] > 'z' {
		ns = "c_" + ns
	}
	if len(ns) > model.MaxNamespaceLen {
		ns = strings.TrimRight(ns[:model.MaxNamespaceLen], "_")
	}
	return ns
}

// Command is the command that runs an npm entry's server: npx at the
// pinned version, never asking (-y), then the entry's arguments.
func (e *Entry) Command() []string {
	return append([]string{"npx", "-y", e.Package + "@" + e.Version}, e.Args...)
}

// Pinned is the entry's pin, as shown: package@version, the URL, or
// repo@commit//path.
func (e *Entry) Pinned() string {
	switch e.Shape {
	case ShapeNPM:
		return e.Package + "@" + e.Version
	case ShapeRemote:
		return e.URL
	}
	s := e.Repo + "@" + e.Commit
	if e.Path != "" {
		s += "//" + e.Path
	}
	return s
}

// UnknownSlugError is Lookup's error for a slug the catalog does not list.
type UnknownSlugError struct {
	Slug     string
	Location string
	Closest  []string
}

func (e *UnknownSlugError) Error() string {
	msg := fmt.Sprintf("the catalog %s has no capability %q", e.Location, e.Slug)
	if len(e.Closest) > 0 {
		msg += "; did you mean " + strings.Join(e.Closest, ", ") + "?"
	}
	return msg
}

// Lookup finds the entry of slug; an unknown slug is an
// *UnknownSlugError naming the closest slugs.
func (c *Catalog) Lookup(slug string) (*Entry, error) {
	for i := range c.Capabilities {
		if c.Capabilities[i].Slug == slug {
			return &c.Capabilities[i], nil
		}
	}
	slugs := make([]string, len(c.Capabilities))
	for i := range c.Capabilities {
		slugs[i] = c.Capabilities[i].Slug
	}
	return nil, &UnknownSlugError{Slug: slug, Location: c.Location, Closest: Closest(slug, slugs, 3)}
}

// Closest is up to n of names nearest to s by edit distance (and those
// that contain s or that s contains), nearest first; none farther than a
// third of s's length plus one.
func Closest(s string, names []string, n int) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	limit := len(s)/3 + 1
	for _, name := range names {
		d := model.EditDistance(s, name)
		if s != "" && (strings.Contains(name, s) || strings.Contains(s, name)) {
			d = min(d, 1)
		}
		if d <= limit {
			cs = append(cs, cand{name, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.name)
	}
	return out
}

// Read reads the catalog at location: a folder holding index.json, an
// index.json file, or an http(s) URL (of index.json itself when it ends in
// .json, else of the folder that holds it).
func Read(ctx context.Context, location string) (*Catalog, error) {
	if location == "" {
		return nil, errors.New("reading the catalog: no catalog given: pass --registry <folder|URL> or set CAPABILITIES_REGISTRY")
	}
	var data []byte
	var err error
	if strings.HasPrefix(location, "http://") || strings.HasPrefix(location, "https://") {
		data, err = fetch(ctx, location)
	} else {
		data, err = readLocal(location)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the catalog %s: %w", location, err)
	}
	ix, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("reading the catalog %s: %w", location, err)
	}
	return &Catalog{Index: *ix, Location: location}, nil
}

func readLocal(location string) ([]byte, error) {
	p := strings.TrimPrefix(location, "file://")
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("no such folder or file (give a folder holding index.json, or its URL)")
		}
		return nil, err
	}
	if fi.IsDir() {
		p = filepath.Join(p, IndexFile)
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("the folder holds no %s", IndexFile)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxIndexBytes+1))
}

// fetchTimeout bounds reading a catalog over HTTP.
const fetchTimeout = 30 * time.Second

func fetch(ctx context.Context, location string) ([]byte, error) {
	u, err := url.Parse(location)
	if err != nil || u.Host == "" {
		return nil, errors.New("not a URL")
	}
	if u.User != nil {
		return nil, errors.New("the URL holds a user or password; a catalog is public data")
	}
	if !strings.HasSuffix(u.Path, ".json") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/" + IndexFile
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, MaxIndexBytes+1))
}

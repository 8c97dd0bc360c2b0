package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP Skills extension (SEP-2640, io.modelcontextprotocol/skills):
// each skill the served profile shows is served as resources, one per
// file, at skill://<name>/<file> (resources/list, resources/read), and
// described by skills/list and skills/get: its SKILL.md's front matter as
// written and every file with its SHA-256 digest and size. The list
// follows the hub's skills (a skill added or removed in another process)
// and the profile, with notifications/resources/list_changed. A client
// that does not know the extension sees ordinary resources. Skills are
// data: reading one runs nothing and grants nothing.

// SkillsExtension is the extension's identifier in the server's
// capabilities.
const SkillsExtension = "io.modelcontextprotocol/skills"

// skillsScheme is the URI scheme of the skills' resources.
const skillsScheme = "skill://"

// skillServing is the resources registered for the profile's skills.
type skillServing struct {
	mu   sync.Mutex
	uris []string // registered resource URIs
	stop func()   // stops following the hub's changes
}

// withSkills adds to caps what a server serving skills declares:
// resources (with list_changed) and the extension.
func withSkills(caps *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	caps.Resources = &mcp.ResourceCapabilities{ListChanged: true}
	caps.Extensions = map[string]any{SkillsExtension: map[string]any{}}
	return caps
}

// codeCapabilities are code mode's: the SDK's defaults (logging, which
// conformance's logging-set-level uses; tools, added by go-sdk) and skills.
func codeCapabilities() *mcp.ServerCapabilities {
	//lint:ignore SA1019 logging stays declared as the SDK declares it by default, for clients of revisions before 2026-07-28
	return withSkills(&mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}})
}

// serveSkills registers the profile's skills and the extension's methods,
// and follows changes to either.
func (s *Server) serveSkills() {
	_ = mcp.AddReceivingCustomMethod(s.mcp, "skills/list", func(ctx context.Context, _ *mcp.ServerSession, p *listSkillsParams) (*listSkillsResult, error) {
		return s.listSkills(ctx)
	})
	_ = mcp.AddReceivingCustomMethod(s.mcp, "skills/get", func(ctx context.Context, _ *mcp.ServerSession, p *getSkillParams) (*getSkillResult, error) {
		return s.getSkill(ctx, p)
	})
	s.syncSkills(context.Background())
	// The hub's store watcher (Hub.Watch) follows the skills folder too,
	// and calls this on a change made by another process.
	s.skills.stop = s.hub.OnChange(func() { s.syncSkills(context.Background()) })
}

// stopSkills stops following changes.
func (s *Server) stopSkills() {
	s.skills.mu.Lock()
	defer s.skills.mu.Unlock()
	if s.skills.stop != nil {
		s.skills.stop()
		s.skills.stop = nil
	}
}

// shownSkills are the hub's skills the served profile shows, by name.
func (s *Server) shownSkills(ctx context.Context) (skill.Store, []*skill.Stored, error) {
	st, ok := s.hub.Skills()
	if !ok {
		return st, nil, nil
	}
	all, err := st.List()
	if err != nil {
		return st, nil, err
	}
	p, err := s.hub.Profile(ctx, s.name)
	if errors.Is(err, hub.ErrUnknownProfile) {
		return st, nil, nil // removed: it shows nothing
	}
	if err != nil {
		return st, nil, err
	}
	return st, slices.DeleteFunc(all, func(sk *skill.Stored) bool { return !p.ShowsSkill(sk.Name) }), nil
}

// skillURI is the resource URI of a skill's file (slash-separated).
func skillURI(name, file string) string {
	parts := strings.Split(file, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return skillsScheme + name + "/" + strings.Join(parts, "/")
}

// syncSkills registers a resource for each file of each shown skill and
// removes those of skills gone; go-sdk sends list_changed for a change.
func (s *Server) syncSkills(ctx context.Context) {
	s.skills.mu.Lock()
	defer s.skills.mu.Unlock()
	_, shown, err := s.shownSkills(ctx)
	if err != nil {
		s.opts.Logger.Warn("listing the skills to serve", "err", err)
		return
	}
	type res struct {
		r    *mcp.Resource
		name string
		file string
	}
	want := map[string]res{}
	for _, sk := range shown {
		for _, f := range sk.Files {
			r := &mcp.Resource{URI: skillURI(sk.Name, f), Name: f, MIMEType: mimeOf(f)}
			if f == "SKILL.md" {
				r.Name, r.Description, r.MIMEType = sk.Name, sk.Description, "text/markdown"
			}
			if fi, err := os.Stat(filepath.Join(sk.Dir, filepath.FromSlash(f))); err == nil {
				r.Size = fi.Size()
			}
			want[r.URI] = res{r, sk.Name, f}
		}
	}
	var gone []string
	for _, u := range s.skills.uris {
		if _, ok := want[u]; !ok {
			gone = append(gone, u)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	uris := make([]string, 0, len(want))
	for u, r := range want {
		uris = append(uris, u)
		if slices.Contains(s.skills.uris, u) {
			continue
		}
		s.mcp.AddResource(r.r, s.readSkillFile(r.name, r.file))
	}
	slices.Sort(uris)
	s.skills.uris = uris
}

// readSkillFile reads a skill's file when a client asks, from the hub's
// copy as it is now, if the profile still shows the skill.
func (s *Server) readSkillFile(name, file string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		st, shown, err := s.shownSkills(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", req.Params.URI, err)
		}
		if !slices.ContainsFunc(shown, func(sk *skill.Stored) bool { return sk.Name == name }) {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		b, err := os.ReadFile(filepath.Join(st.Dir, name, filepath.FromSlash(file)))
		if err != nil {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		c := &mcp.ResourceContents{URI: req.Params.URI, MIMEType: mimeOf(file)}
		if file == "SKILL.md" {
			c.MIMEType = "text/markdown"
		}
		if utf8.Valid(b) {
			c.Text = string(b)
		} else {
			c.Blob = b
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
	}
}

// mimeOf is a file's media type by its extension (text/plain when unknown
// and text; go-sdk fills the resource's when empty).
func mimeOf(file string) string {
	switch strings.ToLower(path.Ext(file)) {
	case ".md", ".markdown":
		return "text/markdown"
	case "":
		return "text/plain"
	}
	if t := mime.TypeByExtension(path.Ext(file)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// The extension's wire types.

type listSkillsParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type getSkillParams struct {
	mcp.ParamsBase
	URI string `json:"uri"`
}

// skillEntry is a skill: its SKILL.md's URI, front matter and files.
type skillEntry struct {
	URI         string          `json:"uri"`
	Frontmatter map[string]any  `json:"frontmatter"`
	Resources   []skillResource `json:"resources"`
}

type skillResource struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// cacheFields are the results' cache hints: a skill may change at any
// time (ttlMs 0), and the listing is this person's hub (private).
type cacheFields struct {
	ResultType string `json:"resultType"`
	TTLMs      int    `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`
}

var fresh = cacheFields{ResultType: "complete", TTLMs: 0, CacheScope: "private"}

type listSkillsResult struct {
	mcp.ResultBase
	cacheFields
	Skills []skillEntry `json:"skills"`
}

type getSkillResult struct {
	mcp.ResultBase
	cacheFields
	Skill skillEntry `json:"skill"`
}

// entry reads one skill's entry: every file with its digest and size.
func entry(sk *skill.Stored) (skillEntry, error) {
	e := skillEntry{URI: skillURI(sk.Name, "SKILL.md"), Resources: []skillResource{}}
	fm, err := skill.Frontmatter(sk.Doc)
	if err != nil {
		return e, err
	}
	e.Frontmatter = fm
	for _, f := range sk.Files {
		b, err := os.ReadFile(filepath.Join(sk.Dir, filepath.FromSlash(f)))
		if err != nil {
			return e, err
		}
		sum := sha256.Sum256(b)
		e.Resources = append(e.Resources, skillResource{URI: skillURI(sk.Name, f), Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(b))})
	}
	return e, nil
}

func (s *Server) listSkills(ctx context.Context) (*listSkillsResult, error) {
	_, shown, err := s.shownSkills(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing skills: %w", err)
	}
	out := &listSkillsResult{cacheFields: fresh, Skills: []skillEntry{}}
	for _, sk := range shown {
		e, err := entry(sk)
		if err != nil {
			s.opts.Logger.Warn("a skill is left out of skills/list", "skill", sk.Name, "err", err)
			continue
		}
		out.Skills = append(out.Skills, e)
	}
	return out, nil
}

func (s *Server) getSkill(ctx context.Context, p *getSkillParams) (*getSkillResult, error) {
	name, ok := strings.CutPrefix(p.URI, skillsScheme)
	name, ok2 := strings.CutSuffix(name, "/SKILL.md")
	unknown := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%q is not the SKILL.md of a skill this server serves (skills/list lists them)", p.URI)}
	if !ok || !ok2 || skill.CheckName(name) != nil {
		return nil, unknown
	}
	_, shown, err := s.shownSkills(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the skill: %w", err)
	}
	i := slices.IndexFunc(shown, func(sk *skill.Stored) bool { return sk.Name == name })
	if i < 0 {
		return nil, unknown
	}
	e, err := entry(shown[i])
	if err != nil {
		return nil, fmt.Errorf("reading the skill %s: %w", name, err)
	}
	return &getSkillResult{cacheFields: fresh, Skill: e}, nil
}

package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/oauth"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/skill"
)

// SecretName is the name a connection's secret is known by on every
// machine (the environment variable it is looked up in): a local
// command's own variable (GITHUB_TOKEN), with the connection's name after
// it for another than the default (GITHUB_TOKEN_WORK); for a remote
// server, NAMESPACE_TOKEN likewise.
func SecretName(src model.Source, conn string) string {
	base := src.SecretEnv
	if base == "" {
		base = strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(src.Namespace)) + "_TOKEN"
	}
	if conn == "" || conn == hub.DefaultConnection {
		return base
	}
	return base + "_" + strings.ToUpper(strings.ReplaceAll(conn, "-", "_"))
}

// FromHub is the hub's state as the stack holds it.
func FromHub(ctx context.Context, h *hub.Hub) (*State, error) {
	s := NewState()
	recs, err := h.Sources(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the hub's sources: %w", err)
	}
	for _, rec := range recs {
		src := rec.Source
		conns, err := h.Connections(ctx, src.Namespace)
		if err != nil {
			return nil, fmt.Errorf("reading the hub's sources: %w", err)
		}
		sf := SourceFile{Source: FromModel(src), Connections: []Connection{}}
		for _, c := range conns.Items {
			sc := Connection{Name: c.Name}
			switch {
			case c.Auth == model.AuthOAuth:
				sc.Auth = model.AuthOAuth
			case src.Kind == model.KindStdio:
				sc.Secret, sc.Env = SecretName(src, c.Name), src.SecretEnv
			default:
				sc.Secret, sc.Header = SecretName(src, c.Name), src.SecretHeader
				if sc.Header == "" && src.Kind == model.KindHTTP {
					sc.Header = "Authorization"
				}
			}
			sf.Connections = append(sf.Connections, sc)
		}
		s.Sources[src.Namespace] = sf
	}
	p, err := h.Policy(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range p.Rules {
		sr := Rule{Target: r.Target, Connection: r.Connection, Action: r.Action}
		s.Rules[sr.Key()] = sr
	}
	profs, err := h.Profiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the hub's profiles: %w", err)
	}
	for _, pr := range profs {
		if pr.Name == hub.DefaultProfile && pr.All() && pr.Mode == hub.ModeCode && len(pr.Skills) == 0 {
			continue // the default as it is without a record: nothing to carry
		}
		s.Profiles[pr.Name] = pr
	}
	if st, ok := h.Skills(); ok {
		list, err := st.List()
		if err != nil {
			return nil, err
		}
		for _, sk := range list {
			if sk.Origin.Git != "" {
				s.Skills[sk.Name] = Skill{Name: sk.Name, Git: &GitSkill{Repo: sk.Origin.Git, Commit: sk.Origin.Commit, Path: sk.Origin.Subdir}}
				continue
			}
			files := map[string][]byte{}
			for _, f := range sk.Files {
				b, err := os.ReadFile(filepath.Join(sk.Dir, filepath.FromSlash(f)))
				if err != nil {
					return nil, fmt.Errorf("reading the skill %s: %w", sk.Name, err)
				}
				files[f] = b
			}
			s.Skills[sk.Name] = Skill{Name: sk.Name, Files: files}
		}
	}
	return s, nil
}

// Secrets is every secret value the hub holds, and every credential a
// source's config holds in plain text, by whose it is: what must never
// enter the stack.
func Secrets(ctx context.Context, h *hub.Hub) (map[string]string, error) {
	out := map[string]string{}
	recs, err := h.Sources(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the hub's sources: %w", err)
	}
	for _, rec := range recs {
		src := rec.Source
		for _, v := range src.PlainCredentials() {
			out[v] = "a credential written in plain text in the source " + src.Namespace + "'s config"
		}
		conns, err := h.Connections(ctx, src.Namespace)
		if err != nil {
			return nil, err
		}
		for _, c := range conns.Items {
			v, err := h.Secrets().Get(secret.Quiet(ctx), c.SecretRef)
			if errors.Is(err, secret.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading the credential of %s to keep it out of the stack: %w", c.SecretRef, err)
			}
			whose := "the credential of " + c.SecretRef
			out[v] = whose
			if tk, ok := oauth.Parse(v); ok {
				for _, x := range []string{tk.AccessToken, tk.RefreshToken} {
					if x != "" {
						out[x] = whose
					}
				}
				continue
			}
			for _, x := range model.Secrets(v) {
				out[x] = whose
			}
		}
	}
	return out, nil
}

// skillStore is the hub's skill store, or an error for a hub with none.
func skillStore(h *hub.Hub) (skill.Store, error) {
	st, ok := h.Skills()
	if !ok {
		return st, errors.New("this hub keeps no skills (its store has no folder)")
	}
	return st, nil
}

package edit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// Vault keeps the credentials a snapshot takes out of its copies: the
// hub's secret store (the OS keychain, or its mode-600 file).
type Vault interface {
	Get(ctx context.Context, ref string) (string, error)
	Set(ctx context.Context, ref, value string) error
	Delete(ctx context.Context, ref string) error
}

// A sealed copy holds, where the file had a credential, a placeholder
// naming the secret store's entry that keeps the credential's bytes as the
// file wrote them: ${capabilities-secret:snapshot/<time>/<file>.<n>}.
const (
	placeholderOpen  = "${capabilities-secret:"
	placeholderClose = "}"
)

func placeholder(ref string) string { return placeholderOpen + ref + placeholderClose }

// Credentials lists the credentials a config file holds in plain text,
// longest first: each value of a variable, header or key named like a
// credential, each value shaped like a well-known token, each password or
// token inside a URL or connection string (model.PlainSecrets), each
// argument holding one (model.CredentialArgs), anywhere in the document.
// A file that does not parse holds none that can be told apart: nil, false.
func Credentials(format Format, src []byte) ([]string, bool) {
	var doc any
	switch format {
	case JSON, JSONC:
		if len(bytes.TrimSpace(bytes.TrimPrefix(src, bom))) == 0 {
			return nil, true
		}
		v, err := decodeJSON(src)
		if err != nil {
			return nil, false
		}
		doc = v
	case TOML:
		d, err := parseTOML(src)
		if err != nil {
			return nil, false
		}
		doc = d.values
	default:
		return nil, true
	}
	var out []string
	add := func(vs []string) {
		for _, v := range vs {
			if v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	var walk func(name string, v any)
	walk = func(name string, v any) {
		switch v := v.(type) {
		case string:
			s, _ := model.PlainSecrets(name, v)
			add(s)
		case map[string]any:
			for k, x := range v {
				walk(k, x)
			}
		case []any:
			var strs []string
			for _, x := range v {
				if s, ok := x.(string); ok {
					strs = append(strs, s)
					s, _ := model.PlainSecrets("", s)
					add(s)
				} else {
					walk(name, x)
				}
			}
			for _, a := range model.CredentialArgs(strs) {
				add(a.Secrets)
			}
		}
	}
	walk("", doc)
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out, true
}

// forms are the ways a credential may be written in a config file: as it
// is, and escaped as a JSON (or TOML basic) string writes it.
func forms(v string) []string {
	out := []string{v}
	for _, html := range []bool{false, true} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if enc.Encode(v) != nil {
			continue
		}
		q := strings.TrimSuffix(b.String(), "\n")
		if e := q[1 : len(q)-1]; !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// sealer takes the credentials out of one file's copy in a snapshot: each
// form found in the file goes to the vault under a reference of its own,
// and the copy holds its placeholder.
type sealer struct {
	vault Vault
	base  string   // the references' prefix: snapshot/<time>/<file>
	refs  []string // the references stored, in order
	olds  []string // the forms each replaces
	whole bool     // the file could not be sealed form by form: kept whole
}

// errNoVault is a file with credentials and no vault to keep them in.
var errNoVault = errors.New("there is no secret store to keep them in")

// seal returns src with every form of creds replaced by its placeholder,
// storing each in the vault. When the result still holds a credential the
// format can decode (written in another escaping), or already held a
// placeholder of this snapshot, the whole file goes to the vault instead.
func (s *sealer) seal(ctx context.Context, format Format, src []byte, creds []string) ([]byte, error) {
	if len(creds) == 0 {
		return src, nil
	}
	if s.vault == nil {
		return nil, fmt.Errorf("making the snapshot: the file holds credentials and %w", errNoVault)
	}
	if bytes.Contains(src, []byte(placeholderOpen+s.base)) {
		return s.sealWhole(ctx, src)
	}
	var olds []string
	for _, c := range creds {
		for _, f := range forms(c) {
			if bytes.Contains(src, []byte(f)) && !slices.Contains(olds, f) {
				olds = append(olds, f)
			}
		}
	}
	slices.SortStableFunc(olds, func(a, b string) int { return len(b) - len(a) })
	for _, f := range olds {
		if err := s.put(ctx, f); err != nil {
			return nil, err
		}
	}
	out := []byte(s.text(string(src)))
	if left, ok := Credentials(format, out); !ok || slices.ContainsFunc(left, func(v string) bool { return !strings.Contains(v, placeholderOpen) }) {
		return s.sealWhole(ctx, src)
	}
	return out, nil
}

func (s *sealer) put(ctx context.Context, value string) error {
	ref := s.base + "." + strconv.Itoa(len(s.refs))
	if err := s.vault.Set(ctx, ref, value); err != nil {
		return fmt.Errorf("making the snapshot: keeping a credential in the secret store: %w", err)
	}
	s.refs = append(s.refs, ref)
	s.olds = append(s.olds, value)
	return nil
}

// sealWhole keeps all of src in the vault: the copy is its placeholder.
func (s *sealer) sealWhole(ctx context.Context, src []byte) ([]byte, error) {
	s.whole = true
	if err := s.put(ctx, string(src)); err != nil {
		return nil, err
	}
	return []byte(placeholder(s.refs[len(s.refs)-1])), nil
}

// text seals a piece of the file (an entry connect --replace moved out,
// the comments above it) with the forms the file's seal stored; after
// sealWhole, the piece goes to the vault whole when it holds any.
func (s *sealer) text(t string) string {
	if s.whole {
		return t // sealText handles it
	}
	pairs := make([]string, 0, 2*len(s.olds))
	for i, old := range s.olds {
		pairs = append(pairs, old, placeholder(s.refs[i]))
	}
	if len(pairs) == 0 {
		return t
	}
	return strings.NewReplacer(pairs...).Replace(t)
}

// sealText is text, storing t whole when the file was kept whole.
func (s *sealer) sealText(ctx context.Context, t string) (string, error) {
	if !s.whole {
		return s.text(t), nil
	}
	if strings.TrimSpace(t) == "" {
		return t, nil
	}
	if err := s.put(ctx, t); err != nil {
		return "", err
	}
	return placeholder(s.refs[len(s.refs)-1]), nil
}

// unseal puts back the credentials of refs into sealed, from the vault.
func unseal(ctx context.Context, vault Vault, sealed string, refs []string) (string, error) {
	if len(refs) == 0 {
		return sealed, nil
	}
	if vault == nil {
		return "", fmt.Errorf("reading the snapshot's credentials: %w", errNoVault)
	}
	pairs := make([]string, 0, 2*len(refs))
	for _, ref := range refs {
		p := placeholder(ref)
		if !strings.Contains(sealed, p) {
			continue
		}
		v, err := vault.Get(ctx, ref)
		if err != nil {
			return "", fmt.Errorf("reading the snapshot's credential %s from the secret store: %w", ref, err)
		}
		pairs = append(pairs, p, v)
	}
	if len(pairs) == 0 {
		return sealed, nil
	}
	return strings.NewReplacer(pairs...).Replace(sealed), nil
}

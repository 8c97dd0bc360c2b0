package cli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/harness/edit"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// homeVar is the variable that says where the hub is.
const homeVar = "CAPABILITIES_HOME"

// hubEnv is the environment the hub's entry carries: CAPABILITIES_HOME (an
// absolute path) when the hub connect writes for is not at the default
// place, ~/.capabilities, so the agent's "hub serve --stdio" opens this hub
// and not another one (or none); nil for the default place, whose entry
// needs no variable.
func hubEnv() (map[string]string, error) {
	home, err := store.OtherHome()
	if err != nil || home == "" {
		return nil, err
	}
	return map[string]string{homeVar: home}, nil
}

// isHubEntry is the rule for an entry that is ours, one connect writes or
// may update: a stdio entry whose command is a capabilities binary (any
// path named capabilities: an older one is still ours; or one of bins,
// the commands connect wrote whatever their name, such as a release
// download's capabilities_linux_amd64, see hubBinaries) running "hub serve
// --stdio", with nothing after it but "--profile NAME" (any profile),
// whose environment, if any, sets only CAPABILITIES_HOME, and with no
// working directory. Any other entry of that name is the person's own:
// connect leaves it as it is and disconnect does not take it out.
func isHubEntry(s harness.Server, bins []string) bool {
	if s.Kind != harness.KindStdio || s.Cwd != "" {
		return false
	}
	base := s.Command[strings.LastIndexAny(s.Command, `/\`)+1:]
	if len(base) > 4 && strings.EqualFold(base[len(base)-4:], ".exe") {
		base = base[:len(base)-4]
	}
	if !strings.EqualFold(base, "capabilities") && !slices.Contains(bins, s.Command) {
		return false
	}
	a := s.Args
	if len(a) < 3 || a[0] != "hub" || a[1] != "serve" || a[2] != "--stdio" {
		return false
	}
	rest := a[3:]
	if n := len(rest); n >= 2 && rest[n-2] == "--hub" && rest[n-1] != "" {
		rest = rest[:n-2] // connect --hub's: a hub on another machine
	}
	switch {
	case len(rest) == 0:
	case len(rest) == 2 && rest[0] == "--profile" && rest[1] != "":
	case len(rest) == 1 && strings.HasPrefix(rest[0], "--profile=") && rest[0] != "--profile=":
	default:
		return false
	}
	for k := range s.Env {
		if k != homeVar {
			return false
		}
	}
	return true
}

// hubBinaries are the commands an entry of the hub's may run besides one
// named capabilities: self (this binary, as connect writes it; "" for
// none) and every command a connect snapshot records having written
// (edit.Commands), so that an entry connect wrote with a binary of another
// name (capabilities_linux_amd64) is still the hub's, for connect to update
// and disconnect to take out.
func hubBinaries(snapRoot, self string) []string {
	bins := edit.Commands(snapRoot)
	if self != "" && !slices.Contains(bins, self) {
		bins = append(bins, self)
	}
	return bins
}

// ownJSON is an entry of the hub's name that connect did not write (the
// person's own, by isHubEntry's rule), as connect and disconnect report it:
// credential values masked.
type ownJSON struct {
	Name    string            `json:"name"`
	Kind    string            `json:"kind,omitempty"` // stdio, http; "" when not understood
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Problem: why the entry was not understood.
	Problem string `json:"problem,omitempty"`
}

// ownEntry is the entry name in f's bytes src when it is there and is not
// ours (isHubEntry); nil when there is none, it is ours, or the file does
// not parse (the edit says so).
func ownEntry(f harness.File, src []byte, name string, bins []string) *ownJSON {
	if len(bytes.TrimSpace(src)) == 0 {
		return nil
	}
	doc, err := harness.Decode(f.Format, src)
	if err != nil {
		return nil
	}
	servers, probs, err := harness.Servers(f, doc)
	if err != nil {
		return nil
	}
	for _, s := range servers {
		if s.Name != name {
			continue
		}
		if isHubEntry(s, bins) {
			return nil
		}
		o := &ownJSON{Name: name, Kind: s.Kind}
		if s.Kind == harness.KindHTTP {
			o.URL = maskURL(s.URL)
			for k, v := range s.Headers {
				if o.Headers == nil {
					o.Headers = map[string]string{}
				}
				o.Headers[k] = maskValue(v)
			}
		} else {
			o.Command, o.Args = s.Command, maskArgs(s.Args)
		}
		return o
	}
	for _, p := range probs {
		if p.Server == name {
			return &ownJSON{Name: name, Problem: p.Err.Error()}
		}
	}
	// An entry the reader skips (a Zed extension's settings) is not ours
	// either.
	if _, ok, _ := edit.EntryJSON(edit.Format(f.Format), src, f.ServersKey, name); ok {
		return &ownJSON{Name: name, Problem: "the entry has neither a command nor a URL"}
	}
	return nil
}

// ownEntries are the entries of names in src that are not ours.
func ownEntries(f harness.File, src []byte, names, bins []string) []ownJSON {
	var out []ownJSON
	for _, n := range names {
		if o := ownEntry(f, src, n, bins); o != nil {
			out = append(out, *o)
		}
	}
	return out
}

// String describes the entry on one line: its command or URL and headers.
func (o ownJSON) String() string {
	switch o.Kind {
	case harness.KindHTTP:
		s := "http " + o.URL
		keys := make([]string, 0, len(o.Headers))
		for k := range o.Headers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s += ", header " + k + ": " + o.Headers[k]
		}
		return s
	case harness.KindStdio:
		return strings.TrimSpace("stdio " + o.Command + " " + strings.Join(o.Args, " "))
	}
	return "not understood: " + o.Problem
}

// mask stands for a hidden value.
const mask = "****"

// maskValue hides a header's value, keeping its scheme (Bearer, Basic) and
// a value that only refers to a variable (${TOKEN}): the harness fills it
// in, the file does not hold it.
func maskValue(v string) string {
	v = strings.TrimSpace(v)
	if model.OnlyReference(v) {
		return v
	}
	if scheme, rest, ok := strings.Cut(v, " "); ok && !strings.ContainsAny(scheme, "=:") {
		if rest = strings.TrimSpace(rest); model.OnlyReference(rest) {
			return scheme + " " + rest
		}
		return scheme + " " + mask
	}
	if v == "" {
		return ""
	}
	return mask
}

// maskURL hides a URL's password and the values of its query.
func maskURL(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		auth := u[i+3:]
		if j := strings.IndexAny(auth, "/?#"); j >= 0 {
			auth = auth[:j]
		}
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			if user, _, ok := strings.Cut(auth[:at], ":"); ok {
				u = u[:i+3] + user + ":" + mask + u[i+3+at:]
			}
		}
	}
	base, query, ok := strings.Cut(u, "?")
	if !ok {
		return u
	}
	query, frag, hasFrag := strings.Cut(query, "#")
	parts := strings.Split(query, "&")
	for i, p := range parts {
		if k, v, ok := strings.Cut(p, "="); ok && !model.OnlyReference(v) {
			parts[i] = k + "=" + mask
		}
	}
	out := base + "?" + strings.Join(parts, "&")
	if hasFrag {
		out += "#" + frag
	}
	return out
}

// maskArgs hides the arguments that look like credentials: a value shaped
// like a token, the value of a flag named like one (--api-key X,
// --token=X).
func maskArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if k, _, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") && model.CredentialName(strings.TrimLeft(k, "-")) {
			out[i] = k + "=" + mask
			continue
		}
		prev := ""
		if i > 0 {
			prev = args[i-1]
		}
		if model.PlainCredential("", a) ||
			(strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") && model.CredentialName(strings.TrimLeft(prev, "-")) && !strings.HasPrefix(a, "-")) {
			out[i] = mask
		}
	}
	return out
}

// ownNote is what connect or disconnect (kind) says, under a file's line,
// of the person's own entries in it, and how to go on.
func ownNote(kind string, own []ownJSON) string {
	var sb strings.Builder
	for _, o := range own {
		if kind == "connect" {
			fmt.Fprintf(&sb, "  it already has its own %q entry, not one connect writes: %s\n", o.Name, o)
			fmt.Fprintf(&sb, "  to use the hub's stdio entry there instead, remove that one (from the file, or with the agent's own remove command) and run connect again\n")
			continue
		}
		fmt.Fprintf(&sb, "  left: its own %q entry, which connect did not write: %s\n", o.Name, o)
	}
	return sb.String()
}

// secretMasks lists the credential values f's bytes src hold, each with
// what stands for it: the value of an environment variable or header of a
// server's entry that the classifier (model.PlainCredential) takes for a
// credential, an argument or URL of an entry that maskArgs or maskURL
// hide, and any value of the file shaped like a well-known token. A file
// that does not parse gives none.
func secretMasks(f harness.File, src []byte) map[string]string {
	out := map[string]string{}
	if len(bytes.TrimSpace(src)) == 0 {
		return out
	}
	doc, err := harness.Decode(f.Format, src)
	if err != nil {
		return out
	}
	add := func(v, masked string) {
		if v = strings.TrimSpace(v); v != "" && v != masked {
			out[v] = masked
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			if model.PlainCredential("", x) {
				add(x, maskValue(x))
			}
		}
	}
	walk(doc)
	servers, _, _ := harness.Servers(f, doc)
	for _, s := range servers {
		for k, v := range s.Env {
			if model.PlainCredential(k, v) {
				add(v, mask)
			}
		}
		for k, v := range s.Headers {
			if !model.PlainCredential(k, v) {
				continue
			}
			m := maskValue(v)
			add(v, m)
			// The credential after its scheme (Bearer), wherever else it is.
			if scheme, rest, ok := strings.Cut(strings.TrimSpace(v), " "); ok && strings.HasPrefix(m, scheme+" ") {
				add(rest, mask)
			}
		}
		for i, a := range maskArgs(s.Args) {
			add(s.Args[i], a)
		}
		add(s.URL, maskURL(s.URL))
	}
	return out
}

// maskSecrets shows text (lines of f's bytes before and after an edit)
// with each credential value those bytes hold (secretMasks) masked, as
// written and as JSON or TOML escapes it.
func maskSecrets(f harness.File, text string, srcs ...[]byte) string {
	masks := map[string]string{}
	for _, src := range srcs {
		maps.Copy(masks, secretMasks(f, src))
	}
	for v, m := range maps.Clone(masks) {
		if q, err := json.Marshal(v); err == nil {
			if esc := string(q[1 : len(q)-1]); esc != v {
				masks[esc] = m
			}
		}
	}
	olds := slices.Collect(maps.Keys(masks))
	// The longest first: a value that holds another is masked whole.
	slices.SortFunc(olds, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	pairs := make([]string, 0, 2*len(olds))
	for _, v := range olds {
		pairs = append(pairs, v, masks[v])
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
	"gopkg.in/yaml.v3"
)

// Server is one MCP server entry of a harness config.
type Server struct {
	Name     string            `json:"name"`
	Kind     string            `json:"kind"` // "stdio" or "http"
	Command  string            `json:"command,omitempty"`
	Args     []string          `json:"args,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	URL      string            `json:"url,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	Disabled bool              `json:"disabled,omitempty"`
	// Transport is "sse" for an entry that says "type": "sse" (the legacy
	// HTTP+SSE transport), "" otherwise.
	Transport string `json:"transport,omitempty"`
	// Filled says which values ExpandServer filled in from variables, and
	// which references it left as written.
	Filled []Filled `json:"-"`
	// FromSecret: the env variables and headers filled in from a variable
	// named like a credential (name → variable).
	FromSecret map[string]string `json:"-"`
	// CwdFromProject: the scan gave a project's server its working
	// directory (projectCwd: the project's folder, or its relative cwd
	// under it), which the entry wrote as CwdWritten ("" for none). A
	// source imported before import did so runs it with the cwd as
	// written, and is still the entry's (sameServer).
	CwdFromProject bool   `json:"-"`
	CwdWritten     string `json:"-"`
}

// Kinds of servers.
const (
	KindStdio = "stdio"
	KindHTTP  = "http"
)

// SyntaxError is a config file that does not parse, with the position of
// the problem (1-based; Col 0 when the parser gives only a line).
type SyntaxError struct {
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	switch {
	case e.Line > 0 && e.Col > 0:
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// Decode parses a config file's bytes into plain values (objects are
// map[string]any). A UTF-8 byte order mark and CRLF line ends are fine; an
// empty file is an empty object. A file that does not parse gives a
// *SyntaxError.
func Decode(format Format, data []byte) (map[string]any, error) {
	data = bytes.TrimPrefix(data, bom)
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{}, nil
	}
	switch format {
	case JSON, JSONC:
		return decodeJSON(data)
	case TOML:
		var out map[string]any
		if err := toml.Unmarshal(data, &out); err != nil {
			var de *toml.DecodeError
			if errors.As(err, &de) {
				line, col := de.Position()
				return nil, &SyntaxError{Line: line, Col: col, Msg: de.Error()}
			}
			return nil, &SyntaxError{Msg: err.Error()}
		}
		return out, nil
	case YAML:
		return decodeYAML(data)
	}
	return nil, fmt.Errorf("decoding: unknown format %q", format)
}

var hujsonPos = regexp.MustCompile(`^hujson: line (\d+), column (\d+): (.*)$`)

func decodeJSON(data []byte) (map[string]any, error) {
	// hujson parses in place and Standardize blanks out comments in the
	// bytes it was given: work on a copy, the caller's bytes stay as read.
	v, err := hujson.Parse(bytes.Clone(data))
	if err != nil {
		if m := hujsonPos.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			col, _ := strconv.Atoi(m[2])
			return nil, &SyntaxError{Line: line, Col: col, Msg: m[3]}
		}
		return nil, &SyntaxError{Msg: err.Error()}
	}
	v.Standardize()
	var out any
	if err := json.Unmarshal(v.Pack(), &out); err != nil {
		return nil, &SyntaxError{Msg: err.Error()}
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, &SyntaxError{Line: 1, Col: 1, Msg: "the file is not a JSON object"}
	}
	return m, nil
}

var yamlPos = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func decodeYAML(data []byte) (m map[string]any, err error) {
	var out any
	if err := yaml.Unmarshal(data, &out); err != nil {
		msg := strings.SplitN(err.Error(), "\n", 2)[0]
		if mm := yamlPos.FindStringSubmatch(msg); mm != nil {
			line, _ := strconv.Atoi(mm[1])
			return nil, &SyntaxError{Line: line, Msg: mm[2]}
		}
		return nil, &SyntaxError{Msg: strings.TrimPrefix(msg, "yaml: ")}
	}
	if out == nil {
		return map[string]any{}, nil
	}
	v, err := plainYAML(out, 0)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &SyntaxError{Line: 1, Msg: "the file is not a YAML mapping"}
	}
	return m, nil
}

// plainYAML turns YAML's map[any]any (keys that are not all strings) into
// map[string]any.
func plainYAML(v any, depth int) (any, error) {
	if depth > 100 {
		return nil, &SyntaxError{Msg: "nested too deeply"}
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p, err := plainYAML(e, depth+1)
			if err != nil {
				return nil, err
			}
			x[k] = p
		}
		return x, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			p, err := plainYAML(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k)] = p
		}
		return out, nil
	case []any:
		for i, e := range x {
			p, err := plainYAML(e, depth+1)
			if err != nil {
				return nil, err
			}
			x[i] = p
		}
		return x, nil
	}
	return v, nil
}

// Problem is a server entry that was not understood (the others of its
// file still are).
type Problem struct {
	Server string
	Err    error
}

// ReadFile reads a config file's servers. It returns os.ErrNotExist (wrapped)
// when the file is not there, a *SyntaxError when it does not parse, and
// the entries it could not understand as problems.
func ReadFile(f File) ([]Server, []Problem, error) {
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", f.Path, err)
	}
	return Parse(f, data)
}

// Parse reads the servers of a config file's bytes.
func Parse(f File, data []byte) ([]Server, []Problem, error) {
	doc, err := Decode(f.Format, data)
	if err != nil {
		return nil, nil, err
	}
	return Servers(f, doc)
}

// Servers reads the servers of a decoded config file at f.ServersKey.
func Servers(f File, doc map[string]any) ([]Server, []Problem, error) {
	v, err := at(doc, f.ServersKey)
	if err != nil || v == nil {
		return nil, nil, err
	}
	entries, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("%s is a %s, not an object of servers", strings.Join(f.ServersKey, "."), typeName(v))
	}
	off := offBy(f, doc)
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Server
	var probs []Problem
	for _, n := range names {
		s, skip, err := entry(n, entries[n])
		if err != nil {
			probs = append(probs, Problem{Server: n, Err: err})
			continue
		}
		if skip {
			continue
		}
		s.Disabled = s.Disabled || off(n) != ""
		out = append(out, s)
	}
	return out, probs, nil
}

// TurnedOff says why the file doc turns the server name off by a list
// outside its entry (Claude Code's disabledMcpServers, Gemini CLI's
// mcp.excluded, or its mcp.allowed that does not list it); "" when no list
// does.
func TurnedOff(f File, doc map[string]any, name string) string { return offBy(f, doc)(name) }

func offBy(f File, doc map[string]any) func(name string) string {
	names := func(key []string) (map[string]bool, bool) {
		if key == nil {
			return nil, false
		}
		d, _ := at(doc, key)
		list, ok := d.([]any)
		if !ok {
			return nil, false
		}
		out := map[string]bool{}
		for _, n := range list {
			if s, ok := n.(string); ok {
				out[s] = true
			}
		}
		return out, true
	}
	excluded, _ := names(f.DisabledKey)
	allowed, allowList := names(f.AllowedKey)
	return func(name string) string {
		switch {
		case excluded[name]:
			return fmt.Sprintf("%s lists it: take it out there", strings.Join(f.DisabledKey, "."))
		case allowList && !allowed[name]:
			return fmt.Sprintf("%s does not list it: add it there", strings.Join(f.AllowedKey, "."))
		}
		return ""
	}
}

// at follows a key path; a missing key gives nil.
func at(doc map[string]any, path []string) (any, error) {
	var v any = doc
	for i, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is a %s, not an object", strings.Join(path[:i], "."), typeName(v))
		}
		v, ok = m[k]
		if !ok {
			return nil, nil
		}
	}
	return v, nil
}

func typeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "number"
}

// entry reads one server entry. It understands every harness's spelling:
// command (a string, or Zed's older {path, args, env}), args, env, cwd;
// url, serverUrl (Windsurf, Antigravity), httpUrl (Gemini); headers,
// http_headers, bearer_token_env_var and env_http_headers (Codex);
// disabled: true or enabled: false. An entry with a "settings" object and
// no command (a Zed extension's server) is skipped.
func entry(name string, v any) (s Server, skip bool, err error) {
	m, ok := v.(map[string]any)
	if !ok {
		return s, false, fmt.Errorf("the entry is a %s, not an object", typeName(v))
	}
	s.Name = name
	str := func(key string) (string, error) {
		x, ok := m[key]
		if !ok || x == nil {
			return "", nil
		}
		if t, ok := x.(string); ok {
			return t, nil
		}
		return "", fmt.Errorf("%s is a %s, not a string", key, typeName(x))
	}
	if s.Args, err = strList(m, "args"); err != nil {
		return s, false, err
	}
	if s.Env, err = strMap(m, "env"); err != nil {
		return s, false, err
	}
	if s.Cwd, err = str("cwd"); err != nil {
		return s, false, err
	}
	switch c := m["command"].(type) {
	case nil:
	case string:
		s.Command = c
	case map[string]any: // Zed before 0.194: "command": {"path", "args", "env"}
		if s.Command, _ = c["path"].(string); s.Command == "" {
			return s, false, fmt.Errorf("command has no path")
		}
		if s.Args, err = strList(c, "args"); err != nil {
			return s, false, err
		}
		if s.Env, err = strMap(c, "env"); err != nil {
			return s, false, err
		}
	case []any: // a command given as a list: program then arguments
		list, err := strList(m, "command")
		if err != nil || len(list) == 0 {
			return s, false, fmt.Errorf("command is an empty or mixed list")
		}
		s.Command, s.Args = list[0], append(list[1:], s.Args...)
	default:
		return s, false, fmt.Errorf("command is a %s, not a string", typeName(c))
	}
	for _, k := range []string{"url", "serverUrl", "httpUrl"} {
		u, err := str(k)
		if err != nil {
			return s, false, err
		}
		if u != "" && s.URL == "" {
			s.URL = u
		}
	}
	for _, k := range []string{"headers", "http_headers"} {
		h, err := strMap(m, k)
		if err != nil {
			return s, false, err
		}
		for hk, hv := range h {
			if s.Headers == nil {
				s.Headers = map[string]string{}
			}
			s.Headers[hk] = hv
		}
	}
	if ev, err := str("bearer_token_env_var"); err != nil {
		return s, false, err
	} else if ev != "" {
		if s.Headers == nil {
			s.Headers = map[string]string{}
		}
		s.Headers["Authorization"] = "Bearer ${" + ev + "}"
	}
	eh, err := strMap(m, "env_http_headers")
	if err != nil {
		return s, false, err
	}
	for hk, ev := range eh {
		if s.Headers == nil {
			s.Headers = map[string]string{}
		}
		s.Headers[hk] = "${" + ev + "}"
	}
	if t, _ := m["type"].(string); strings.EqualFold(t, "sse") {
		s.Transport = "sse"
	}
	if d, ok := m["disabled"].(bool); ok && d {
		s.Disabled = true
	}
	if e, ok := m["enabled"].(bool); ok && !e {
		s.Disabled = true
	}
	switch {
	case s.Command != "" && s.URL != "":
		return s, false, fmt.Errorf("the entry has both a command and a URL")
	case s.Command != "":
		s.Kind = KindStdio
	case s.URL != "":
		s.Kind = KindHTTP
	default:
		if _, ok := m["settings"]; ok {
			return s, true, nil
		}
		return s, false, fmt.Errorf("the entry has neither a command nor a URL")
	}
	return s, false, nil
}

// scalar turns a string, number or boolean into its text.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int, int64, uint64:
		return fmt.Sprint(x), true
	}
	return "", false
}

func strList(m map[string]any, key string) ([]string, error) {
	x, ok := m[key]
	if !ok || x == nil {
		return nil, nil
	}
	list, ok := x.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is a %s, not a list", key, typeName(x))
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		s, ok := scalar(e)
		if !ok {
			return nil, fmt.Errorf("%s[%d] is a %s, not a string", key, i, typeName(e))
		}
		out = append(out, s)
	}
	return out, nil
}

func strMap(m map[string]any, key string) (map[string]string, error) {
	x, ok := m[key]
	if !ok || x == nil {
		return nil, nil
	}
	obj, ok := x.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is a %s, not an object", key, typeName(x))
	}
	if len(obj) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(obj))
	for k, e := range obj {
		s, ok := scalar(e)
		if !ok {
			return nil, fmt.Errorf("%s.%s is a %s, not a string", key, k, typeName(e))
		}
		out[k] = s
	}
	return out, nil
}

// readConfig reads and decodes one agent config file: fs.ErrNotExist when
// it is not there, an error saying what went wrong (reading, or where the
// syntax breaks) when it cannot be used.
func readConfig(f File) (map[string]any, error) {
	data, err := os.ReadFile(f.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fs.ErrNotExist
	case err != nil:
		return nil, fmt.Errorf("reading: %w", err)
	}
	return Decode(f.Format, data)
}

package harness

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// Vars is the variable syntax a harness fills in, in a server entry's
// command, arguments, environment, working directory, URL and headers,
// when it starts the server. Each harness says which in its own file.
type Vars struct {
	// Braces: ${VAR}, the variable of the agent's environment; with
	// Default also ${VAR:-default}, the default when VAR is not set
	// (Claude Code, Gemini CLI).
	Braces, Default bool
	// Bare: $VAR too (Gemini CLI).
	Bare bool
	// EnvPrefix: ${env:VAR} (Cursor, VS Code, Windsurf).
	EnvPrefix bool
	// Editor: the editor's own variables, ${workspaceFolder} (the folder
	// of a project's file), ${workspaceFolderBasename}, ${userHome},
	// ${pathSeparator} and ${/} (Cursor, VS Code).
	Editor bool
	// Passed are the kinds of the harness's own variables import cannot
	// fill in (VS Code's ${input:id}, asked of the person when the server
	// starts, ${config:name} and ${command:id}; Windsurf's ${file:path}, a
	// file's contents): left as written, and said (Filled.Passed).
	Passed []string
	// HeadersOnly: the syntax is filled in only in headers (Codex fills in
	// nothing written in its entries; its bearer_token_env_var and
	// env_http_headers name variables, which entry writes as ${VAR}).
	HeadersOnly bool
}

func (v Vars) none() bool { return !v.Braces && !v.Bare && !v.EnvPrefix && !v.Editor }

// ErrUnset is a server whose entry refers to a variable that is not set
// where import runs and has no default: the agent would start it with
// the value, the hub cannot.
var ErrUnset = errors.New("its entry refers to a value import cannot fill in")

// Filled says what expansion did to one value of a server entry.
type Filled struct {
	Field string // as written: command, args[2], env.GITHUB_TOKEN, url, headers.Authorization
	// Vars are the variables of the environment it took a value from.
	Vars []string
	// Unset are the references left as written: a variable not set with
	// no default, or an editor variable with no value here
	// (${workspaceFolder} in a user file), with why.
	Unset []UnsetRef
	// Passed are the harness's own variables left as written, which it
	// fills in when it starts the server and import cannot (Vars.Passed),
	// with why: the hub passes them as written.
	Passed []UnsetRef
}

// UnsetRef is one reference expansion could not fill in.
type UnsetRef struct {
	Ref string // as written: ${GITHUB_TOKEN}
	Var string // the variable, "" for an editor variable
	Why string
}

// ExpandServer fills in what the harness of f would fill in when it starts
// the server s (f.Vars): variables from env's environment (the one import
// runs in), ${workspaceFolder} with the folder of a project's file. What
// it cannot fill in stays as written and is said in s.Unfilled; the
// environment variables and headers filled in from a variable named like
// a credential are listed in s.FromSecret, so that import moves their
// values into the secret store.
func ExpandServer(env Env, f File, s Server) Server {
	v := f.Vars
	if v.none() {
		return s
	}
	title := f.Harness
	if h, ok := Lookup(f.Harness); ok {
		title = h.Title
	}
	x := expander{v: v, env: env, title: title}
	if f.Project && !f.InUserFile {
		x.folder = env.Cwd
	}
	one := func(field, val string) string {
		out, fl := x.expand(val)
		if len(fl.Vars) > 0 || len(fl.Unset) > 0 || len(fl.Passed) > 0 {
			fl.Field = field
			s.Filled = append(s.Filled, fl)
		}
		return out
	}
	if !v.HeadersOnly {
		s.Command = one("command", s.Command)
		if len(s.Args) > 0 {
			args := make([]string, len(s.Args))
			for i, a := range s.Args {
				args[i] = one(fmt.Sprintf("args[%d]", i), a)
			}
			s.Args = args
		}
		s.Env = x.expandMap(s.Env, "env", one)
		s.Cwd = one("cwd", s.Cwd)
		s.URL = one("url", s.URL)
	}
	s.Headers = x.expandMap(s.Headers, "headers", one)
	for _, fl := range s.Filled {
		kind, name, ok := strings.Cut(fl.Field, ".")
		if !ok || (kind != "env" && kind != "headers") {
			continue
		}
		for _, vr := range fl.Vars {
			if model.CredentialName(vr) {
				if s.FromSecret == nil {
					s.FromSecret = map[string]string{}
				}
				s.FromSecret[name] = vr
			}
		}
	}
	return s
}

type expander struct {
	v      Vars
	env    Env
	title  string
	folder string // the project's folder, "" for a user file
}

func (x expander) expandMap(m map[string]string, kind string, one func(field, val string) string) map[string]string {
	if len(m) == 0 {
		return m
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, len(m))
	for _, k := range keys {
		out[k] = one(kind+"."+k, m[k])
	}
	return out
}

var (
	braceRef = regexp.MustCompile(`\$\{([^}]*)\}`)
	bareRef  = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)
	varName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// expand fills in one value.
func (x expander) expand(val string) (string, Filled) {
	var fl Filled
	if !strings.Contains(val, "$") {
		return val, fl
	}
	lookup := func(name string) (string, bool) {
		if x.env.Getenv == nil {
			return "", false
		}
		if x.env.LookupEnv != nil {
			return x.env.LookupEnv(name)
		}
		v := x.env.Getenv(name)
		return v, v != ""
	}
	fromEnv := func(ref, name, def string, hasDef bool) string {
		if v, ok := lookup(name); ok {
			fl.Vars = append(fl.Vars, name)
			return v
		}
		if hasDef {
			return def
		}
		fl.Unset = append(fl.Unset, UnsetRef{Ref: ref, Var: name, Why: fmt.Sprintf("%s is not set in the environment import runs in, and the entry gives no default", name)})
		return ref
	}
	sep := "/"
	if x.env.goos() == "windows" {
		sep = `\`
	}
	out := braceRef.ReplaceAllStringFunc(val, func(ref string) string {
		inner := ref[2 : len(ref)-1]
		switch {
		case x.v.EnvPrefix && strings.HasPrefix(inner, "env:") && varName.MatchString(inner[4:]):
			return fromEnv(ref, inner[4:], "", false)
		case x.v.Editor && inner == "workspaceFolder", x.v.Editor && inner == "workspaceFolderBasename":
			if x.folder == "" {
				fl.Unset = append(fl.Unset, UnsetRef{Ref: ref, Why: fmt.Sprintf("%s fills it in with the folder it has open, and a server of the user's file runs in no one folder: write the path in its place, or import from the project whose own file has the server", x.title)})
				return ref
			}
			if inner == "workspaceFolder" {
				return x.folder
			}
			return filepath.Base(x.folder)
		case x.v.Editor && inner == "userHome":
			return x.env.Home
		case x.v.Editor && (inner == "pathSeparator" || inner == "/"):
			return sep
		case x.v.Braces:
			name, def, hasDef := strings.Cut(inner, ":-")
			if !varName.MatchString(name) {
				return ref
			}
			return fromEnv(ref, name, def, hasDef && x.v.Default)
		}
		if why := x.passed(inner); why != "" {
			fl.Passed = append(fl.Passed, UnsetRef{Ref: ref, Why: why})
		}
		return ref // another harness's syntax, or ${input:…}: as written
	})
	if x.v.Bare {
		out = bareRef.ReplaceAllStringFunc(out, func(ref string) string {
			return fromEnv(ref, ref[1:], "", false)
		})
	}
	return out, fl
}

// passed says how the harness fills in the reference ${inner} when it is
// one of its own that import cannot fill in (Vars.Passed), "" otherwise.
func (x expander) passed(inner string) string {
	kind, arg, ok := strings.Cut(inner, ":")
	if !ok || !slices.Contains(x.v.Passed, kind) {
		return ""
	}
	switch kind {
	case "input":
		return fmt.Sprintf("%s asks for it when it starts the server (the input %q of its \"inputs\")", x.title, arg)
	case "config":
		return fmt.Sprintf("%s fills it in with its setting %s", x.title, arg)
	case "command":
		return fmt.Sprintf("%s fills it in with what its command %s returns", x.title, arg)
	case "file":
		return fmt.Sprintf("%s fills it in with the contents of the file %s", x.title, arg)
	}
	return fmt.Sprintf("%s fills it in when it starts the server", x.title)
}

// refVar is the variable a value that is only one reference names
// (${GITHUB_TOKEN}, ${env:GITHUB_TOKEN}), "" otherwise.
func refVar(v string) string {
	v = strings.TrimSpace(v)
	if !model.OnlyReference(v) {
		return ""
	}
	inner := strings.TrimPrefix(v[2:len(v)-1], "env:")
	name, _, _ := strings.Cut(inner, ":-")
	if !varName.MatchString(name) {
		return ""
	}
	return name
}

// FilledFrom says which values of the entry were filled in from which
// variables of the environment ("args[0] from $SCRIPTS"), in the entry's
// order: what import, and a person asked to start a repository's server,
// are told. Names only, never values.
func (s Server) FilledFrom() []string {
	var out []string
	for _, fl := range s.Filled {
		if len(fl.Vars) == 0 {
			continue
		}
		vars := make([]string, len(fl.Vars))
		for i, v := range fl.Vars {
			vars[i] = "$" + v
		}
		out = append(out, fl.Field+" from "+strings.Join(vars, ", "))
	}
	return out
}

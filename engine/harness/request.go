package harness

import (
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
)

// Request is the hub.AddRequest that adds the proposal under its namespace,
// with notes for the person on what does not carry over. A plain-text
// credential leaves the environment or headers for req.Secret, which the
// caller stores with hub.Auth as the source's default connection (the
// harness file keeps it: a harness cannot read the keychain). A server
// with more than one is refused: a source has one credential per
// connection; add it with `hub add` and `hub auth`. An env variable named
// like a credential whose value is only a reference (${GITHUB_TOKEN})
// becomes the source's SecretEnv, to be stored with `hub auth`. A
// credential inside a larger value (a DATABASE_URL's password) moves as
// the whole value, which the server reads back under the same name; an
// argument that holds one stays, and both are noted (plainNotes).
func (p Proposal) Request() (req hub.AddRequest, notes []string, err error) {
	s := p.Server
	req.Namespace = p.Namespace
	if len(p.Secrets) > 1 {
		return req, nil, fmt.Errorf("%s holds %d credentials in plain text (%s); the hub keeps one per source: add it with `capabilities hub add` and `capabilities hub auth`", p.Namespace, len(p.Secrets), strings.Join(p.Secrets, ", "))
	}
	credName := ""
	if len(p.Secrets) == 1 {
		credName = p.Secrets[0]
	}
	notes = plainNotes(s)
	if err := p.unsetErr(); err != nil {
		return req, nil, err
	}
	if s.Kind == KindHTTP && s.Transport == "sse" {
		return req, nil, fmt.Errorf("%w: %s's entry says \"type\": \"sse\" (%s); add the server's streamable HTTP endpoint instead, with `capabilities hub add <url>` (often the same host, at /mcp)", ErrSSE, p.Namespace, s.URL)
	}
	notes = append(notes, p.passedNotes()...)
	if s.Kind == KindHTTP {
		req.URL = s.URL
		for _, h := range sortedKeys(s.Headers) {
			v := s.Headers[h]
			switch {
			case h == credName:
				if sh, secret, ok := hub.CredentialHeader(h, v); ok {
					req.SecretHeader, req.Secret = sh, secret
				} else {
					notes = append(notes, fmt.Sprintf("header %s is left out: the hub sends a credential in it as Bearer; store one with `capabilities hub auth %s`", h, p.Namespace))
				}
			case IsReference(v):
				why := "which the harness fills in"
				if s.unset("headers." + h) {
					why = "which the harness fills in from a variable not set where import runs"
				}
				notes = append(notes, fmt.Sprintf("header %s refers to %s, %s: store the value with `capabilities hub auth %s --header %s`", h, v, why, p.Namespace, h))
			case strings.EqualFold(h, "authorization"):
				notes = append(notes, fmt.Sprintf("header %s is left out: a credential goes in with `capabilities hub auth %s`", h, p.Namespace))
			default:
				if req.Headers == nil {
					req.Headers = map[string]string{}
				}
				req.Headers[h] = v
			}
		}
		return req, notes, nil
	}
	req.Command = append([]string{s.Command}, s.Args...)
	req.Cwd = s.Cwd
	if len(s.Env) > 0 {
		req.Env = maps.Clone(s.Env)
	}
	if credName != "" {
		req.SecretEnv, req.Secret = credName, s.Env[credName]
		delete(req.Env, credName)
	}
	for _, k := range sortedKeys(req.Env) {
		if v := req.Env[k]; req.SecretEnv == "" && credentialRef(k, v) {
			// A credential the harness fills in from elsewhere: the source
			// reads it from its connection, which a person stores.
			req.SecretEnv = k
			delete(req.Env, k)
			why := "a credential the harness fills in"
			if name := refVar(v); name != "" && s.unset("env."+k) {
				why = fmt.Sprintf("a credential the harness fills in from %s, which is not set where import runs", name)
			}
			notes = append(notes, fmt.Sprintf("env %s=%s is %s: store it with `capabilities hub auth %s`; until then its calls wait for it", k, v, why, p.Namespace))
			continue
		}
		if IsReference(req.Env[k]) {
			notes = append(notes, fmt.Sprintf("env %s=%s is a reference the harness fills in; the hub passes it as written (store a credential with `capabilities hub auth %s --env %s`)", k, req.Env[k], p.Namespace, k))
		}
	}
	return req, notes, nil
}

// passedNotes say which of the server's command, arguments, working
// directory and URL hold a variable of the harness's own that import
// cannot fill in (Filled.Passed: VS Code's ${input:…}), which the hub
// passes as written: the server, the file, the field, the variable, and
// what to do. The server is still added (its start says whether the
// value as written will do); an env variable or header holding one is
// noted on its own (Request).
func (p Proposal) passedNotes() []string {
	s := p.Server
	file := "the agent's config"
	if len(p.Origins) > 0 {
		file = p.Origins[0].Path
	}
	var notes []string
	for _, fl := range s.Filled {
		if fl.Field != "command" && fl.Field != "cwd" && fl.Field != "url" && !strings.HasPrefix(fl.Field, "args[") {
			continue
		}
		for _, r := range fl.Passed {
			n := fmt.Sprintf("%s refers to %s: %s; the hub cannot, and passes it to %q as written: write the value in its place in %s and import again", fl.Field, r.Ref, r.Why, s.Name, file)
			if credentialArg(s.Args, fl.Field, r.Ref) {
				n += fmt.Sprintf(" (a credential: if the server reads it from an environment variable, set that to %s in the entry instead; the source then waits for `capabilities hub auth %s`)", r.Ref, p.Namespace)
			}
			notes = append(notes, n)
		}
	}
	return notes
}

// credentialArg reports whether the reference ref in the argument field
// (args[i]) names a credential: its own name (${input:api-key}) or its
// flag's (--token ${input:x}, --token=${input:x}).
func credentialArg(args []string, field, ref string) bool {
	if _, id, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(ref, "${"), "}"), ":"); ok && model.CredentialName(id) {
		return true
	}
	var i int
	if _, err := fmt.Sscanf(field, "args[%d]", &i); err != nil || i < 0 || i >= len(args) {
		return false
	}
	if k, _, ok := strings.Cut(args[i], "="); ok && strings.HasPrefix(k, "-") {
		return model.CredentialName(strings.TrimLeft(k, "-"))
	}
	return i > 0 && strings.HasPrefix(args[i-1], "-") && model.CredentialName(strings.TrimLeft(args[i-1], "-"))
}

// ErrSSE is a server that speaks only the legacy HTTP+SSE transport.
var ErrSSE = errors.New("the hub does not speak the SSE transport (streamable HTTP only)")

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// credentialRef reports whether the env variable name's value is only a
// reference to a credential: the variable or the one it refers to is
// named like one (GITHUB_TOKEN=${GITHUB_TOKEN}, API=${env:MY_SECRET}).
func credentialRef(name, value string) bool {
	v := strings.TrimSpace(value)
	return model.OnlyReference(v) && (model.CredentialName(name) || model.CredentialName(refVar(v)))
}

// unset reports whether expansion left a reference of field as written.
func (s Server) unset(field string) bool {
	for _, fl := range s.Filled {
		if fl.Field == field && len(fl.Unset) > 0 {
			return true
		}
	}
	return false
}

// unsetErr is the error of a server whose entry refers to what import
// cannot fill in (ErrUnset), naming the server, each field and each
// reference, and how to fix it. A credential that is only a reference
// (an env variable or header the source reads from its connection) is
// not one: it is stored with hub auth, and the notes say so.
func (p Proposal) unsetErr() error {
	s := p.Server
	var parts []string
	for _, fl := range s.Filled {
		kind, name, _ := strings.Cut(fl.Field, ".")
		for _, u := range fl.Unset {
			switch {
			case kind == "env" && credentialRef(name, s.Env[name]):
				continue
			case kind == "headers" && IsReference(s.Headers[name]) && (model.CredentialName(name) || model.CredentialName(u.Var)):
				continue
			}
			part := fmt.Sprintf("%s refers to %s: %s", fl.Field, u.Ref, u.Why) // an editor variable's says the fix
			if u.Var != "" {
				part += fmt.Sprintf("; set %s where you run import (export %s=…), or write the value in the agent's config", u.Var, u.Var)
			}
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	in := ""
	if len(p.Origins) > 0 {
		in = " in " + p.Origins[0].Path
	}
	return fmt.Errorf("server %q%s is not added: %w: %s; then run import again", s.Name, in, ErrUnset, strings.Join(parts, "; "))
}

package harness

import (
	"fmt"
	"sort"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// IsReference reports whether a config value refers to a value kept
// elsewhere (${VAR}, ${env:VAR}, VS Code's ${input:id}) rather than holding
// it: the harness fills it in when it starts the server.
func IsReference(v string) bool { return model.IsReference(v) }

// IsSecret reports whether the value of the variable or header name is a
// credential written in plain text.
func IsSecret(name, value string) bool { return model.PlainCredential(name, value) }

// Secrets names the environment variables (stdio) or headers (HTTP) of a
// server whose values are plain-text credentials, sorted.
func Secrets(s Server) []string {
	var out []string
	for _, m := range []map[string]string{s.Env, s.Headers} {
		for k, v := range m {
			if IsSecret(k, v) || (s.FromSecret[k] != "" && !IsReference(v)) {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// plainNotes says what of a server's plain-text credentials import cannot
// move into the keychain or scrub whole: an argument that holds one stays
// in the command line (scrubbed), and a password too short or too common
// to be scrubbed on its own (model.PlainSecrets) reaches the model when it
// is written without the rest of its value.
func plainNotes(s Server) []string {
	var notes, weak []string
	for _, kind := range []struct {
		what string
		m    map[string]string
	}{{"env", s.Env}, {"header", s.Headers}} {
		for _, k := range sortedKeys(kind.m) {
			if _, w := model.PlainSecrets(k, kind.m[k]); w {
				weak = append(weak, kind.what+" "+k)
			}
		}
	}
	if s.Kind == KindStdio {
		for _, a := range model.CredentialArgs(s.Args) {
			name := a.Flag
			if name == "" {
				name = fmt.Sprintf("%d", a.Index+1)
			}
			notes = append(notes, fmt.Sprintf("argument %s holds a credential in plain text: it stays in the command line, scrubbed from what the model sees", name))
			if a.Weak {
				weak = append(weak, "argument "+name)
			}
		}
	}
	for _, w := range weak {
		notes = append(notes, fmt.Sprintf("the password in %s is too short or too common to scrub on its own: the model sees [secret] for the whole value, but not for the password written alone; give it a long, random password", w))
	}
	return notes
}

package harness

import (
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
			if IsSecret(k, v) {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

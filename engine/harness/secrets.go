package harness

import (
	"regexp"
	"sort"
	"strings"
)

// IsReference reports whether a config value refers to a value kept
// elsewhere (${VAR}, ${env:VAR}, VS Code's ${input:id}) rather than holding
// it: the harness fills it in when it starts the server.
func IsReference(v string) bool { return refPattern.MatchString(v) }

var refPattern = regexp.MustCompile(`\$\{[^}]+\}`)

// secretName matches variable and header names that hold credentials.
var secretName = regexp.MustCompile(`(?i)token|key|secret|passw(or)?d|^authorization$|^proxy-authorization$`)

// secretShape matches values shaped like well-known credentials whatever
// their variable is called.
var secretShape = regexp.MustCompile(`^(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{16,}|xox[bpas]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*|(?i:bearer)\s+\S+)$`)

// IsSecret reports whether the value of the variable or header name is a
// credential written in plain text.
func IsSecret(name, value string) bool {
	value = strings.TrimSpace(value)
	if value == "" || IsReference(value) {
		return false
	}
	return secretName.MatchString(name) || secretShape.MatchString(value)
}

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

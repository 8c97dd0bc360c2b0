package cli

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/openapi"
	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newAddCmd(e *env) *cobra.Command {
	var (
		ns      string
		yes     bool
		asJSON  bool
		envs    []string
		headers []string
		cwd     string
		timeout time.Duration
		callTO  time.Duration
		sEnv    string
		sHeader string
		auth    bool
		isDoc   bool
		server  string
		sStdin  bool
	)
	c := &cobra.Command{
		Use:   "add <url> | add <openapi document> | add [flags] -- <command> [args…]",
		Short: "Add an MCP server or an HTTP API as a source",
		Long: `Add an MCP server: a streamable-HTTP URL, or a local command that speaks MCP
on stdin/stdout (everything after --). The hub connects, lists the tools, proposes
a namespace from the server's name and shows what it found before storing it.

Or add an HTTP API by its OpenAPI 3.0/3.1 or Swagger 2.0 document (JSON or YAML,
a file or a URL ending in .json/.yaml/.yml or naming openapi or swagger; --openapi
for any other URL): each operation becomes a tool, called only at the document's
server (or --server). Its $refs may lead to other documents of the same origin
(a URL) or in its folder and below (a file); anything else is refused. When the
document declares an API key, bearer or basic scheme, the credential is asked
for once (or read with --secret-stdin).`,
		Example: `  capabilities hub add --yes -- npx -y @modelcontextprotocol/server-everything stdio
  capabilities hub add --namespace memory --env MEMORY_FILE_PATH=/tmp/memory.jsonl -- node server-memory/dist/index.js
  capabilities hub add http://127.0.0.1:3001/mcp
  capabilities hub add https://petstore3.swagger.io/api/v3/openapi.json`,
		RunE: func(c *cobra.Command, args []string) error {
			if asJSON && !yes {
				return usagef("--json needs --yes: the JSON form does not prompt")
			}
			req := hub.AddRequest{Namespace: ns, Cwd: cwd, SecretEnv: sEnv, SecretHeader: sHeader}
			if c.Flags().Changed("call-timeout") {
				if callTO < time.Millisecond {
					return usagef("--call-timeout %v: give a positive duration such as 90s", callTO)
				}
				req.CallTimeout = callTO
			}
			if auth || sStdin {
				v, err := e.readSecret("Credential for the new source (input hidden): ")
				if err != nil {
					return err
				}
				if strings.TrimSpace(v) == "" {
					return fmt.Errorf("adding a source: empty secret: nothing to store; type or pipe the credential")
				}
				req.Secret = v
			}
			if dash := c.ArgsLenAtDash(); dash >= 0 {
				if dash > 0 {
					return usagef("put the URL before the flags, or the command after --, not both")
				}
				req.Command = args
				if len(args) == 0 {
					return usagef("no command after --")
				}
			} else {
				if len(args) != 1 {
					return usagef("add expects a URL, or -- followed by a command (got %d arguments)", len(args))
				}
				req.URL = args[0]
				if isDoc || server != "" || openapi.IsDocumentLocation(req.URL) {
					req.Document, req.URL, req.Server = req.URL, "", server
				} else if !strings.Contains(req.URL, "://") {
					return usagef("%q is not a URL; to run a local command put it after --: capabilities hub add -- %s", req.URL, req.URL)
				}
			}
			if len(envs) > 0 {
				req.Env = map[string]string{}
				for _, kv := range envs {
					k, v, ok := strings.Cut(kv, "=")
					if !ok || k == "" {
						return usagef("--env %q: write NAME=value", kv)
					}
					req.Env[k] = v
				}
			}
			for _, kv := range headers {
				k, v, ok := strings.Cut(kv, ":")
				if !ok || strings.TrimSpace(k) == "" {
					return usagef("--header %q: write NAME: value", kv)
				}
				if req.Headers == nil {
					req.Headers = map[string]string{}
				}
				req.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
			argCreds, weak := keptCredentials(&req)
			moved, plain := takeCredential(&req)
			switch {
			case moved != "":
				fmt.Fprintf(e.stderr, "capabilities: %s holds a credential: it goes into the secret store as the source's default connection, not into the hub's config\n", moved)
			case len(plain) == 1:
				fmt.Fprintf(e.stderr, "capabilities: %s holds a credential in plain text; the source's credential in the secret store is another (--auth, --secret-stdin, --secret-env or --secret-header), so it stays in the hub's config (mode 600), scrubbed from what the model sees\n", plain[0])
			case len(plain) > 1:
				fmt.Fprintf(e.stderr, "capabilities: %s hold credentials in plain text; the hub keeps one per source in its secret store (--secret-env NAME or --secret-header NAME with --secret-stdin), so these stay in its config (mode 600), scrubbed from what the model sees\n", strings.Join(plain, ", "))
			}
			switch {
			case len(argCreds) == 1:
				fmt.Fprintf(e.stderr, "capabilities: the command's %s holds a credential in plain text; an argument stays in the command line, in the hub's config (mode 600), scrubbed from what the model sees (a server that reads it from its environment can take it from the secret store: --env NAME=value)\n", argCreds[0])
			case len(argCreds) > 1:
				fmt.Fprintf(e.stderr, "capabilities: the command's %s hold credentials in plain text; an argument stays in the command line, in the hub's config (mode 600), scrubbed from what the model sees (a server that reads them from its environment can take one from the secret store: --env NAME=value)\n", strings.Join(argCreds, ", "))
			}
			if len(weak) > 0 {
				fmt.Fprintf(e.stderr, "capabilities: the password in %s is too short or too common to scrub on its own (under %d bytes, a number, a word, or written elsewhere in the value): the model sees [secret] for the whole value, but not for the password written alone; give it a long, random password\n", strings.Join(weak, ", "), scrub.MinLen)
			}
			var opts hub.Options
			if c.Flags().Changed("timeout") { // else CAPABILITIES_CONNECT_TIMEOUT or the default
				opts.Source.ConnectTimeout = timeout
			}
			h, _, err := e.openHub(opts)
			if err != nil {
				return err
			}
			defer h.Close()
			p, err := h.Propose(c.Context(), req)
			if err != nil {
				return err
			}
			if !asJSON {
				printProposal(e, p)
			}
			if !yes {
				ok, err := confirm(e, fmt.Sprintf("Add it as %q? [y/N] ", p.Source.Namespace))
				if err != nil {
					return err
				}
				if !ok {
					fmt.Fprintln(e.stdout, "Nothing added.")
					return nil
				}
			}
			if err := h.Accept(c.Context(), p); err != nil {
				return err
			}
			ns := p.Source.Namespace
			if req.Secret == "" && p.Source.AuthScheme != "" && e.stdinIsTerminal() {
				v, err := e.readSecret(fmt.Sprintf("Credential for %s (%s; input hidden, empty to add it later): ", ns, p.Source.AuthScheme))
				if err != nil {
					return err
				}
				req.Secret = strings.TrimSpace(v)
			}
			if req.Secret == "" && p.Source.AuthScheme != "" {
				fmt.Fprintf(e.stderr, "%s wants a credential (%s): store it with `capabilities hub auth %s`\n", ns, p.Source.AuthScheme, ns)
			}
			if p.Source.Kind == model.KindOpenAPI && p.Source.Auth == model.AuthOAuth {
				fmt.Fprintf(e.stderr, "%s signs in with OAuth (its document's scheme): sign in with `capabilities hub auth %s`\n", ns, ns)
			}
			if req.Secret != "" {
				if _, err := h.Auth(c.Context(), hub.AuthRequest{Namespace: ns, Value: req.Secret}); err != nil {
					return fmt.Errorf("added %s, but storing its credential failed (run `capabilities hub auth %s`): %w", ns, ns, err)
				}
			}
			if asJSON {
				review, err := h.PendingReview(c.Context(), ns)
				if err != nil {
					return err
				}
				if err := h.AcceptReview(c.Context(), review, nil, "review"); err != nil {
					return err
				}
				r, w, d := p.Counts()
				out := map[string]any{"namespace": ns, "source": p.Source, "tools": len(p.Manifest.Tools), "readOnly": r, "writes": w, "destructive": d, "reviewed": len(review.Items)}
				if p.SignIn || p.Source.Auth == model.AuthOAuth {
					out["signIn"] = "capabilities hub auth " + ns
				}
				if moved != "" {
					out["credentialMoved"] = moved
				}
				if kept := slices.Concat(plain, argCreds); len(kept) > 0 {
					out["plainCredentials"] = kept
				}
				if len(weak) > 0 {
					out["weakPasswords"] = weak
				}
				return e.printJSON(out)
			}
			if p.SignIn {
				fmt.Fprintf(e.stdout, "Added %s; it has no tools until you sign in.\nSign in with: capabilities hub auth %s\n", ns, ns)
				return nil
			}
			fmt.Fprintf(e.stdout, "Added %s with %d tools.\n\n", ns, len(p.Manifest.Tools))
			if err := runReview(c.Context(), e, h, ns, yes, false); err != nil {
				return err
			}
			if len(p.Manifest.Tools) > 0 {
				fmt.Fprintf(e.stdout, "Try: capabilities hub call %s '{…}'\n", p.Manifest.Tools[0].Address)
			}
			return nil
		},
	}
	c.Flags().StringVar(&ns, "namespace", "", "the `NAMESPACE` for the source's tools (default: from the server's name)")
	c.Flags().BoolVarP(&yes, "yes", "y", false, "add the source and accept the review's proposal without asking")
	c.Flags().BoolVar(&yes, "accept", false, "same as --yes")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().StringArrayVar(&envs, "env", nil, "set the variable `NAME=VALUE` in a stdio server's environment (repeatable)")
	c.Flags().StringArrayVar(&headers, "header", nil, "send `HEADER`, written \"Name: value\", with every request to a remote server (repeatable; a credential goes in with --auth)")
	c.Flags().StringVar(&cwd, "cwd", "", "the working directory `DIR` of a stdio server")
	c.Flags().BoolVar(&auth, "auth", false, "read a credential (masked prompt, or standard input) to reach the server now and store it as the default connection")
	c.Flags().BoolVar(&isDoc, "openapi", false, "the URL is an OpenAPI or Swagger document, whatever its name")
	c.Flags().StringVar(&server, "server", "", "the base `URL` an OpenAPI source's calls go to (default: the document's first server)")
	c.Flags().BoolVar(&sStdin, "secret-stdin", false, "read the source's credential from one line of standard input and store it as the default connection")
	c.Flags().StringVar(&sEnv, "secret-env", "", "the environment variable `NAME` a local server reads its credential from (store the credential with capabilities hub auth)")
	c.Flags().StringVar(&sHeader, "secret-header", "", "the header `NAME` a remote server reads its credential from (default Authorization: Bearer)")
	c.Flags().DurationVar(&timeout, "timeout", source.DefaultConnectTimeout, "how long to wait for the server to start and answer, a `DURATION` such as 30s")
	c.Flags().DurationVar(&callTO, "call-timeout", 0, "how long each call to the server's tools may wait for its answer, a `DURATION` such as 90s (default: CAPABILITIES_CALL_TIMEOUT, else 60s)")
	return c
}

func printProposal(e *env, p *hub.Proposal) {
	m := &p.Manifest
	name := m.ServerName
	if m.ServerVersion != "" {
		name += " " + m.ServerVersion
	}
	name = visible.Line(strings.TrimSpace(name))
	if p.SignIn {
		fmt.Fprintf(e.stdout, "Found an MCP server at %s that asks for an OAuth sign-in before it lists its tools\n", p.Source.URL)
	} else if p.Source.Kind == model.KindOpenAPI {
		fmt.Fprintf(e.stdout, "Found %s (an OpenAPI document)\n", name)
	} else {
		fmt.Fprintf(e.stdout, "Found %s over %s (protocol %s)\n", name, p.Source.Kind, visible.Line(m.Protocol))
	}
	if p.Source.Kind == model.KindStdio {
		fmt.Fprintf(e.stdout, "  runs:  %s\n", visible.Line(p.Source.CommandLine()))
		if p.Source.Cwd != "" {
			fmt.Fprintf(e.stdout, "  in:    %s\n", visible.Line(p.Source.Cwd))
		}
		for k := range p.Source.Env {
			fmt.Fprintf(e.stdout, "  env:   %s=…\n", k)
		}
	} else if p.Source.Kind == model.KindOpenAPI {
		fmt.Fprintf(e.stdout, "  document: %s\n", p.Source.Document)
		fmt.Fprintf(e.stdout, "  calls go to: %s\n", p.Source.URL)
		if p.Source.AuthScheme != "" {
			fmt.Fprintf(e.stdout, "  credential: %s\n", p.Source.AuthScheme)
		}
	} else {
		fmt.Fprintf(e.stdout, "  url:   %s\n", p.Source.URL)
	}
	r, w, d := p.Counts()
	fmt.Fprintf(e.stdout, "  tools: %d (%d read-only, %d write, %d destructive, by annotation)\n", len(m.Tools), r, w, d)
	for _, t := range m.Tools {
		fmt.Fprintf(e.stdout, "    %-40s %s\n", t.Address, t.Effect())
	}
	for _, n := range p.Notes {
		fmt.Fprintf(e.stdout, "  note: %s\n", n)
	}
	fmt.Fprintf(e.stdout, "  namespace: %s\n", p.Source.Namespace)
}

// confirm asks a yes/no question on stdin; no answer is "no".
func confirm(e *env, question string) (bool, error) {
	fmt.Fprint(e.stdout, question)
	line, err := e.readLine()
	if err != nil && line == "" {
		fmt.Fprintln(e.stdout)
		return false, fmt.Errorf("no answer on standard input; pass --yes to accept without asking")
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// stdinIsTerminal reports whether a person types on standard input.
func (e *env) stdinIsTerminal() bool {
	f, ok := e.stdin.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// keptCredentials names what takeCredential cannot move: the arguments of
// req's command that hold a credential in plain text (model.CredentialArgs),
// by their flag (--url) or else their place (argument 2); and the flags
// and arguments that hold a password too short or too common to be
// scrubbed on its own (model.PlainSecrets' weak), which the person should
// change whether it moves or not.
func keptCredentials(req *hub.AddRequest) (args, weak []string) {
	if req.Document != "" {
		return nil, nil
	}
	flag, m := "--env ", req.Env
	if len(req.Command) == 0 {
		flag, m = "--header ", req.Headers
	}
	for k, v := range m {
		if _, w := model.PlainSecrets(k, v); w {
			weak = append(weak, flag+k)
		}
	}
	sort.Strings(weak)
	if len(req.Command) > 1 {
		for _, a := range model.CredentialArgs(req.Command[1:]) {
			name := a.Flag
			if name == "" {
				name = fmt.Sprintf("argument %d", a.Index+1)
			}
			args = append(args, name)
			if a.Weak {
				weak = append(weak, name)
			}
		}
	}
	return args, weak
}

// takeCredential moves a credential written in plain text with --env or
// --header out of req into req.Secret, which is stored in the secret store
// as the new source's default connection: when it is the only one, no
// other was given (--auth, --secret-stdin) and --secret-env or
// --secret-header names no other variable (hub.CredentialHeader says how a
// header becomes one). It returns the flag moved ("" for none), or those
// left in plain text.
func takeCredential(req *hub.AddRequest) (moved string, plain []string) {
	if req.Document != "" {
		return "", nil // an OpenAPI document's scheme says where its credential goes
	}
	type found struct{ flag, name, value string }
	var creds []found
	flag, m := "--env ", req.Env // a local command's credential
	if len(req.Command) == 0 {
		flag, m = "--header ", req.Headers // a remote server's
	}
	for k, v := range m {
		if model.PlainCredential(k, v) {
			creds = append(creds, found{flag + k, k, strings.TrimSpace(v)})
		}
	}
	sort.Slice(creds, func(i, j int) bool { return creds[i].flag < creds[j].flag })
	for _, c := range creds {
		plain = append(plain, c.flag)
	}
	if len(creds) != 1 || req.Secret != "" {
		return "", plain
	}
	c := creds[0]
	switch {
	case len(req.Command) > 0:
		if req.SecretEnv != "" && req.SecretEnv != c.name {
			return "", plain
		}
		req.SecretEnv = c.name
	default:
		header, secret, ok := hub.CredentialHeader(c.name, c.value)
		if !ok || (req.SecretHeader != "" && !strings.EqualFold(req.SecretHeader, c.name)) {
			return "", plain
		}
		req.SecretHeader, c.value = header, secret
	}
	delete(m, c.name)
	req.Secret = c.value
	return c.flag, nil
}

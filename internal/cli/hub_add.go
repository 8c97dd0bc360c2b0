package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
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
		verbose bool
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
		relArg  string // the argument that made the current directory the server's
	)
	c := &cobra.Command{
		Use:   "add <url> | add <openapi document> | add [flags] -- <command> [args…]",
		Short: "Add an MCP server or an HTTP API as a source",
		Long: `Add an MCP server: a streamable-HTTP URL, or a local command that speaks MCP
on stdin/stdout (everything after --). The hub connects, lists the tools, proposes
a namespace from the server's name and shows what it found before storing it:
the counts of its tools by kind and the first 20 (--verbose lists them all).

A local command may be slow to start (npx downloads the package on first use):
stderr shows how the start goes, and one still working (writing output, using
CPU) is waited for past --timeout, up to 5 minutes; one that shows no sign of
work past --timeout fails, saying what it was waiting for.

The hub starts a local command later from wherever it runs (agents start it in
their own projects), so paths relative to the directory you run add in are fixed
now: a command written as a relative path (./server.sh, bin/server) is stored
absolute; and when an argument, or the value of --flag=VALUE, is a relative path
to a file or folder that exists here (server/index.js, .), the server will run in
this directory (shown as "in:"), its arguments kept as written, so it finds them
and whatever it reads relative to them. --cwd DIR runs it in DIR instead.

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
			if c.Flags().Changed("timeout") {
				if err := checkTimeout("timeout", timeout, timeoutWhat, "30s"); err != nil {
					return err
				}
			}
			if c.Flags().Changed("call-timeout") {
				if err := checkTimeout("call-timeout", callTO, callTimeoutWhat, "90s"); err != nil {
					return err
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
				if len(args) == 0 {
					return usagef("no command after --")
				}
				wd, err := os.Getwd()
				if err != nil {
					return fmt.Errorf("adding a source: finding the current directory: %w", err)
				}
				if cwd != "" {
					if err := checkCwd(cwd, wd); err != nil {
						return err
					}
				}
				req.Command, req.Cwd, relArg = localPaths(args, cwd, wd)
			} else {
				if len(args) != 1 {
					return usagef("add expects a URL, or -- followed by a command (got %d arguments)", len(args))
				}
				req.URL = args[0]
				if isDoc || server != "" || openapi.IsDocumentLocation(req.URL) {
					req.Document, req.URL, req.Server = req.URL, "", server
				} else if !strings.Contains(req.URL, "://") {
					return usagef("%q is not a URL; to run a local command put it after --: capabilities hub add -- %s", req.URL, req.URL)
				} else if u, err := url.Parse(req.URL); err == nil && u.User != nil {
					if _, hasPassword := u.User.Password(); hasPassword {
						// The URL is kept in the hub's config and shown
						// in list and review; the password in it was
						// sent to the server and scrubbed from nothing.
						name := u.User.Username()
						u.User = nil
						return usagef("the URL holds a password (%s:…@): the hub keeps credentials out of its config and out of the model's sight, so add %s and give the credential with --auth (sent as Authorization: Bearer) or --secret-header NAME --secret-stdin", name, u.String())
					}
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
			opts := e.startOptions()
			if c.Flags().Changed("timeout") { // else CAPABILITIES_CONNECT_TIMEOUT or the default
				opts.Source.ConnectTimeout = timeout
			}
			h, _, err := e.openHub(opts)
			if err != nil {
				return err
			}
			defer h.Close()
			p, err := h.Propose(c.Context(), req)
			e.clearStatus()
			if already := (*hub.AlreadyAddedError)(nil); errors.As(err, &already) {
				// Nothing to do, as when added just now: running the same
				// add twice leaves one source.
				if asJSON {
					return e.printJSON(map[string]any{"added": false, "namespace": already.Namespace, "reason": already.Error()})
				}
				fmt.Fprintf(e.stdout, "Nothing added: %v.\n", already)
				return nil
			}
			if err != nil {
				return err
			}
			if relArg != "" {
				p.Notes = append(p.Notes, fmt.Sprintf("%s is relative to this directory: the server will run in %s wherever the hub starts it (--cwd DIR to run it elsewhere)", visible.Line(relArg), visible.Line(p.Source.Cwd)))
			}
			if !asJSON {
				n := proposalTools
				if verbose {
					n = len(p.Manifest.Tools)
				}
				printProposalTools(e, p, n, "hub add --verbose")
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
			// The review's tools are the proposal's: for a large source,
			// just shown in part, it says how many of each kind it proposes
			// to allow or ask; a small one's are listed with their status.
			show := printReview
			if len(p.Manifest.Tools) > proposalTools {
				show = printReviewCounts
			}
			if err := reviewWith(c.Context(), e, h, ns, yes, false, show); err != nil {
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
	c.Flags().BoolVar(&verbose, "verbose", false, fmt.Sprintf("list every tool the server has (default: the first %d and how many more)", proposalTools))
	c.Flags().StringArrayVar(&envs, "env", nil, "set the variable `NAME=VALUE` in a stdio server's environment (repeatable)")
	c.Flags().StringArrayVar(&headers, "header", nil, "send `HEADER`, written \"Name: value\", with every request to a remote server (repeatable; a credential goes in with --auth)")
	c.Flags().StringVar(&cwd, "cwd", "", "the working directory `DIR` of a stdio server (default: the current directory when an argument is a relative path that exists in it, else none)")
	c.Flags().BoolVar(&auth, "auth", false, "read a credential (masked prompt, or standard input) to reach the server now and store it as the default connection")
	c.Flags().BoolVar(&isDoc, "openapi", false, "the URL is an OpenAPI or Swagger document, whatever its name")
	c.Flags().StringVar(&server, "server", "", "the base `URL` an OpenAPI source's calls go to (default: the document's first server)")
	c.Flags().BoolVar(&sStdin, "secret-stdin", false, "read the source's credential from one line of standard input and store it as the default connection")
	c.Flags().StringVar(&sEnv, "secret-env", "", "the environment variable `NAME` a local server reads its credential from (store the credential with capabilities hub auth)")
	c.Flags().StringVar(&sHeader, "secret-header", "", "the header `NAME` a remote server reads its credential from (default Authorization: Bearer)")
	c.Flags().DurationVar(&timeout, "timeout", source.DefaultConnectTimeout, timeoutWhat+", a `DURATION` such as 30s")
	c.Flags().DurationVar(&callTO, "call-timeout", 0, callTimeoutWhat+", a `DURATION` such as 90s (default: CAPABILITIES_CALL_TIMEOUT, else 60s)")
	return c
}

// localPaths applies add's rule for the paths of a local command, which
// the hub starts later from wherever it runs: argv is the command as typed,
// cwd the --cwd given ("" for none) and wd the directory add runs in. A
// command written as a relative path (it holds a separator) is made
// absolute, resolved against wd. With no --cwd, when an argument, or the
// value of --flag=VALUE, is a relative path to a file or directory that
// exists in wd, the server is to run in wd: dir is wd and rel is that path
// (the first one); the arguments stay as written. Otherwise dir is cwd and
// rel is "".
func localPaths(argv []string, cwd, wd string) (out []string, dir, rel string) {
	out = slices.Clone(argv)
	if c := out[0]; strings.ContainsRune(c, '/') || strings.ContainsRune(c, filepath.Separator) {
		if !filepath.IsAbs(c) {
			out[0] = filepath.Join(wd, c)
		}
	}
	if cwd != "" {
		return out, cwd, ""
	}
	for _, a := range out[1:] {
		if strings.HasPrefix(a, "-") {
			_, v, ok := strings.Cut(a, "=")
			if !ok {
				continue
			}
			a = v
		}
		if a == "" || filepath.IsAbs(a) {
			continue
		}
		if _, err := os.Stat(filepath.Join(wd, a)); err == nil {
			return out, wd, a
		}
	}
	return out, "", ""
}

// checkCwd refuses a --cwd that is no directory (relative to wd, where add
// runs), before the server is started: starting a command in a missing
// directory fails with an error that blames the command.
func checkCwd(cwd, wd string) error {
	dir := cwd
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(wd, dir)
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usagef("the working directory %s does not exist (--cwd)", dir)
	case err != nil:
		return fmt.Errorf("adding a source: checking the working directory (--cwd): %w", err)
	case !fi.IsDir():
		return usagef("the working directory %s is not a directory (--cwd)", dir)
	}
	return nil
}

// What add's --timeout and --call-timeout are, for their help and errors.
const (
	timeoutWhat     = "how long to wait for the server to start and answer"
	callTimeoutWhat = "how long each call to the server's tools may wait for its answer"
)

// checkTimeout refuses a timeout flag's value that is no time to wait:
// negative, zero (neither flag has a use for it: the default is what
// leaving the flag out gives), or under the millisecond a source's call
// timeout is stored in.
func checkTimeout(flag string, d time.Duration, what, example string) error {
	if d >= time.Millisecond {
		return nil
	}
	why := "is negative"
	switch {
	case d == 0:
		why = "is zero"
	case d > 0:
		why = "is shorter than 1ms"
	}
	return usagef("--%s %v %s: give %s, a duration such as %s", flag, d, why, what, example)
}

// proposalTools is how many of a proposal's tools are listed, unless all
// are asked for (hub add --verbose): GitHub's REST description has about
// 1,100.
const proposalTools = 20

// printProposal shows what Propose found, with the first proposalTools
// tools.
func printProposal(e *env, p *hub.Proposal) { printProposalTools(e, p, proposalTools, "") }

// printProposalTools shows what Propose found, with the first n tools (its
// address, effect and the first sentence of its description) and how to
// see the rest: `capabilities hub describe`, or the flag named by more.
func printProposalTools(e *env, p *hub.Proposal, n int, more string) {
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
		fmt.Fprintf(e.stdout, "  runs:  %s\n", visible.Line(p.Source.ShownCommandLine()))
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
	for i := range m.Tools[:min(n, len(m.Tools))] {
		t := &m.Tools[i]
		fmt.Fprintf(e.stdout, "    %-40s %-11s %s\n", t.Address, t.Effect(), firstSentence(t.Description))
	}
	if rest := len(m.Tools) - n; rest > 0 {
		fmt.Fprintf(e.stdout, "    … %d more: capabilities hub describe %s", rest, p.Source.Namespace)
		if more != "" {
			fmt.Fprintf(e.stdout, " (or %s)", more)
		}
		fmt.Fprintln(e.stdout)
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

// Package cli is the `capabilities` command line: one file per verb, each a
// thin client of engine/hub.
package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError marks a mistake in how the command was called (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// errSilent is a failure whose explanation was already printed.
type errSilent struct{ err error }

func (e errSilent) Error() string { return e.err.Error() }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// env is what every command gets: streams and how to reach the hub.
type env struct {
	stdin  io.Reader
	in     *bufio.Reader // lazily wraps stdin; shared by every prompt
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	rawErr io.Writer    // stderr as given, for a status line on a terminal
	status *startStatus // how a server's start goes (startOptions)

	// Global options, given before the command.
	registry string // --registry: the catalog, a folder or URL (CAPABILITIES_REGISTRY)
	noInput  bool   // --no-input: never prompt; fail saying what is missing
	store    string // --store: the hub's records in PostgreSQL, a postgres:// URL (CAPABILITIES_STORE)
}

// interrupted is the cause of the command's context when a signal ended it.
type interrupted struct{ sig syscall.Signal }

func (i interrupted) Error() string {
	switch i.sig {
	case syscall.SIGINT:
		return "stopped by SIGINT"
	case syscall.SIGHUP:
		return "stopped by SIGHUP"
	}
	return "stopped by SIGTERM"
}

// exitCode is the shell's convention for a process ended by the signal.
func (i interrupted) exitCode() int { return 128 + int(i.sig) }

// windDown is how long a command may take to wind down after SIGINT,
// SIGTERM or SIGHUP before the process exits anyway;
// CAPABILITIES_WIND_DOWN sets another (the tests, on a loaded machine).
const windDown = 2 * time.Second

// windDownLimit is windDown, or CAPABILITIES_WIND_DOWN's duration.
func windDownLimit() (time.Duration, error) {
	v := os.Getenv("CAPABILITIES_WIND_DOWN")
	if v == "" {
		return windDown, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("CAPABILITIES_WIND_DOWN=%q: write a positive duration such as 2s", v)
	}
	return d, nil
}

// Main runs the command line and returns the process exit code. SIGINT,
// SIGTERM or SIGHUP (the terminal it ran in was closed) cancels the
// command's context; the command winds down (its upstreams are reaped, its
// sandbox's directory removed) and the exit code is 130, 143 or 129. A
// second signal, or a command still winding down after windDown, ends the
// process at once.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Every command's output holds text from outside (upstream servers, a
	// model's code, agent configs), and the CLI writes no escape sequence
	// of its own: both streams show control and invisible characters as
	// escapes (JSON output keeps its values: JSON reads them the same).
	vout, verr := visible.NewWriter(stdout), visible.NewWriter(stderr)
	defer verr.Flush()
	defer vout.Flush()
	rawErr := stderr
	stdout, stderr = vout, verr
	limit, err := windDownLimit()
	if err != nil {
		fmt.Fprintf(stderr, "capabilities: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	returned := make(chan struct{})
	defer close(returned)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	if !signal.Ignored(syscall.SIGHUP) { // under nohup it stays ignored
		signal.Notify(sigs, syscall.SIGHUP)
	}
	defer signal.Stop(sigs)
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs) // a second signal ends the process
			in := interrupted{s.(syscall.Signal)}
			cancel(in)
			select {
			case <-returned:
			case <-time.After(limit):
				fmt.Fprintf(stderr, "capabilities: %s; still winding down after %v, exiting now\n", in, limit)
				os.Exit(in.exitCode())
			}
		case <-returned:
		}
	}()
	out := &countingWriter{w: stdout}
	e := &env{stdin: stdin, stdout: out, stderr: stderr, log: newLogger(stderr), rawErr: rawErr}
	root := newRoot(e)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(out)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	// A failed --json command prints a JSON error object on stdout (unless
	// it already printed its JSON), and says it on stderr as always.
	asJSON := err != nil && out.n == 0 && wantsJSON(cmd, args)
	var in interrupted
	if errors.As(context.Cause(ctx), &in) {
		fmt.Fprintf(stderr, "capabilities: %s\n", in) // whatever failed, failed for it
		if asJSON {
			e.printError(&codedError{code: codeInterrupted, err: in})
		}
		return in.exitCode()
	}
	if err == nil {
		return exitOK
	}
	var silent errSilent
	if errors.As(err, &silent) {
		return exitError // already explained on stdout
	}
	c := classify(err, cmd)
	if asJSON {
		e.printError(c)
	}
	if c.code == codeUsage {
		fmt.Fprintf(stderr, "capabilities: %v\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
		return exitUsage
	}
	fmt.Fprintf(stderr, "capabilities: %v\n", err)
	return exitError
}

// isCobraUsage recognizes cobra's own argument errors by how they begin
// (an error of ours that merely contains such words is not one).
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "flag needs an argument", "invalid argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func newLogger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	switch strings.ToLower(os.Getenv("CAPABILITIES_LOG")) {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "error":
		level = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "capabilities",
		Short:         "One MCP endpoint for every tool your agents use",
		Long:          "capabilities is a local capability hub: add MCP servers once, and every agent reaches them through one MCP endpoint with three tools (search, describe, execute).",
		Version:       mcpserver.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	useLoginForGit()
	root.PersistentFlags().StringVar(&e.registry, "registry", "", "the catalog capabilities are installed from: a folder or an http(s) `URL` holding index.json (default: $CAPABILITIES_REGISTRY)")
	root.PersistentFlags().BoolVar(&e.noInput, "no-input", false, "never prompt: fail, saying what is missing, where a question would be asked")
	root.PersistentFlags().StringVar(&e.store, "store", "", "keep the hub's records in PostgreSQL: a postgres://USER:PASSWORD@HOST:PORT/DATABASE `URL` (default: $CAPABILITIES_STORE, else the hub folder)")
	h := &cobra.Command{
		Use:   "hub",
		Short: "Manage and serve the hub: sources, tools and calls",
		Args:  subcommands,
		RunE: func(c *cobra.Command, args []string) error {
			return c.Help()
		},
	}
	h.AddCommand(
		newInitCmd(e),
		newAddCmd(e),
		newImportCmd(e),
		newConnectCmd(e),
		newDisconnectCmd(e),
		newRollbackCmd(e),
		newListCmd(e),
		newRemoveCmd(e),
		newRefreshCmd(e),
		newCallCmd(e),
		newSearchCmd(e),
		newDescribeCmd(e),
		newPolicyCmd(e),
		newReviewCmd(e),
		newExecCmd(e),
		newRunsCmd(e),
		newCancelCmd(e),
		newApproveCmd(e),
		newConsoleCmd(e),
		newServeCmd(e),
		newHTTPTokenCmd(e),
		newPauseCmd(e),
		newResumeCmd(e),
		newAuthCmd(e),
		newConnectionsCmd(e),
		newDoctorCmd(e),
		newSkillsCmd(e),
		newProfilesCmd(e),
		newHubSecretsCmd(e),
		newHubLoginCmd(e), newHubPushCmd(e), newHubStatusCmd(e),
	)
	root.AddCommand(h, newRollbackCmd(e))
	root.AddCommand(newStackCmd(e))
	root.AddCommand(newCensusListCmd(e))
	root.AddCommand(newCensusDoctorCmd(e))
	root.AddCommand(newLoginCmd(e))
	root.AddCommand(newLogoutCmd(e))
	root.AddCommand(newHostedCmd(e))
	return root
}

// catalog is --registry, else $CAPABILITIES_REGISTRY ("" when neither is set).
func (e *env) catalog() string {
	if e.registry != "" {
		return e.registry
	}
	return os.Getenv("CAPABILITIES_REGISTRY")
}

// hubDir is $CAPABILITIES_HOME/hub.
func hubDir() (string, error) {
	home, err := store.Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "hub"), nil
}

// openHub opens the existing store and a hub engine over it.
func (e *env) openHub(opts ...hub.Options) (h *hub.Hub, st hubStore, err error) {
	st, err = e.openStore(context.Background())
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if p, ok := st.(*pgStore); ok && err != nil {
			_ = p.Close() // the database's connections
		}
	}()
	var o hub.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if v := os.Getenv("CAPABILITIES_APPROVAL_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, nil, fmt.Errorf("CAPABILITIES_APPROVAL_TTL=%q: write a positive duration such as 24h or 30m", v)
		}
		o.Run.ApprovalTTL = d
	}
	if v := os.Getenv("CAPABILITIES_CONNECT_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, nil, fmt.Errorf("CAPABILITIES_CONNECT_TIMEOUT=%q: write a positive duration such as 30s or 2m", v)
		}
		if o.Source.ConnectTimeout == 0 { // hub add --timeout wins
			o.Source.ConnectTimeout = d
		}
	}
	if v := os.Getenv("CAPABILITIES_CALL_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, nil, fmt.Errorf("CAPABILITIES_CALL_TIMEOUT=%q: write a positive duration such as 60s or 2m", v)
		}
		o.Source.CallTimeout = d // a source's own call timeout wins
	}
	if v := os.Getenv("CAPABILITIES_HANDLE_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1024 {
			return nil, nil, fmt.Errorf("CAPABILITIES_HANDLE_BYTES=%q: write a number of bytes, 1024 or more (a tool result larger than this reaches the code as a handle; default 65536)", v)
		}
		o.Run.HandleBytes = n
	}
	o.Logger = e.log
	if os.Getenv("NO_KEYRING") != "" {
		o.NoKeychain = true
	}
	return hub.New(st, o), st, nil
}

// readLine reads one answer from standard input; every prompt shares one
// buffered reader so answers are not lost between prompts.
func (e *env) readLine() (string, error) {
	if e.in == nil {
		e.in = bufio.NewReader(e.stdin)
	}
	return e.in.ReadString('\n')
}

// printJSON writes v as indented JSON.
func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// exactArgs is cobra.ExactArgs with a message that says what is expected.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s expects %s (got %d argument(s))", c.CommandPath(), what, len(args))
		}
		return nil
	}
}

// withHub opens the hub for a command's RunE and closes it after.
func (e *env) withHub(run func(c *cobra.Command, args []string, h *hub.Hub, st hubStore) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		h, st, err := e.openHub()
		if err != nil {
			return err
		}
		defer h.Close()
		return run(c, args, h, st)
	}
}

// subcommands is the Args of a command that only groups others: a word that
// names none of them is an unknown command, with the closest names (cobra
// suggests them only under the root).
func subcommands(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // what cobra's root uses
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return usageError{errors.New(msg)}
}

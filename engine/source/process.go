package source

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// passEnv are the variables of the hub's own environment a stdio upstream
// inherits: what a program needs to run, nothing else. A source's configured
// variables (and, later, its resolved secret) are added on top.
var passEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE",
	"TMPDIR", "TZ", "TERM", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
	"XDG_CACHE_HOME", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
}

// Environ is the environment a stdio source's process gets.
func Environ(src *model.Source) []string {
	var env []string
	for _, k := range passEnv {
		if v, ok := os.LookupEnv(k); ok {
			if _, set := src.Env[k]; !set {
				env = append(env, k+"="+v)
			}
		}
	}
	for k, v := range src.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// process is a running stdio upstream in its own process group.
type process struct {
	cmd     *exec.Cmd
	stdin   *countWriter
	stdout  *protocolReader // protocol lines only
	stderr  *tail
	outRead atomic.Int64 // bytes read from its stdout, protocol or not
	done    chan struct{}
	err     error // set before done is closed
	strays  int   // non-protocol lines dropped, under mu
	mu      sync.Mutex
}

// countWriter is the process's stdin, counting what was written to it.
type countWriter struct {
	f *os.File
	n atomic.Int64
}

func (w *countWriter) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	w.n.Add(int64(n))
	return n, err
}

func (w *countWriter) Close() error { return w.f.Close() }

// countReader counts what is read from the process's stdout.
type countReader struct {
	r io.Reader
	n *atomic.Int64
}

func (r countReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.n.Add(int64(n))
	return n, err
}

func startProcess(src *model.Source, log *slog.Logger) (*process, error) {
	if src.Cwd != "" {
		if err := checkWorkDir(src); err != nil {
			return nil, fmt.Errorf("starting %s: %w", src.ShownCommandLine(), err)
		}
	}
	path, err := exec.LookPath(src.Command)
	if err != nil {
		return nil, fmt.Errorf("starting %s: command %q not found (is it installed and on PATH?): %w", src.ShownCommandLine(), src.Command, err)
	}
	cmd := exec.Command(path, src.Args...)
	cmd.Dir = src.Cwd
	cmd.Env = Environ(src)
	cmd.SysProcAttr = procAttr()
	p := &process{cmd: cmd, stderr: newTail(8 << 10), done: make(chan struct{})}
	cmd.Stderr = p.stderr
	// Its stdin is a pipe of the hub's own (not StdinPipe's), so the
	// start can tell whether the server has read the handshake yet
	// (unread).
	in, out, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", src.ShownCommandLine(), err)
	}
	cmd.Stdin = in
	p.stdin = &countWriter{f: out}
	raw, err := cmd.StdoutPipe()
	if err != nil {
		in.Close()
		out.Close()
		return nil, fmt.Errorf("starting %s: %w", src.ShownCommandLine(), err)
	}
	err = cmd.Start()
	in.Close() // the child's end
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("starting %s: %w", src.ShownCommandLine(), err)
	}
	p.stdout = &protocolReader{br: bufio.NewReaderSize(countReader{raw, &p.outRead}, 64<<10), raw: raw, p: p, ns: src.Namespace, log: log}
	go func() {
		p.err = cmd.Wait()
		_ = out.Close() // as StdinPipe's end is closed once the process exited
		close(p.done)
	}()
	return p, nil
}

// checkWorkDir checks a stdio source's working directory before it is
// started in it: starting a command in a missing directory fails with an
// error that blames the command ("fork/exec /usr/bin/node: no such file or
// directory").
func checkWorkDir(src *model.Source) error {
	fi, err := os.Stat(src.Cwd)
	what := "does not exist"
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		what = "is not a directory"
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("checking its working directory: %w", err)
	}
	if src.Namespace == "" { // being added
		return fmt.Errorf("its working directory %s %s: create it, or add the server with another working directory", src.Cwd, what)
	}
	return fmt.Errorf("its working directory %s %s: recreate it, or remove the source with `capabilities hub remove %s` and add it again from where its files are", src.Cwd, what, src.Namespace)
}

// protocolReader passes on the upstream's protocol lines (a JSON object or
// array) and drops anything else, so a stray print does not kill the
// session. It filters as it is read: no goroutine or pipe between the
// process and the MCP session.
type protocolReader struct {
	br  *bufio.Reader
	raw io.ReadCloser
	p   *process
	ns  string
	log *slog.Logger
	err error // what ended the stream, returned by next from then on
	max int   // the longest line kept; 0: maxProtocolLine
}

// maxProtocolLine is the longest line an upstream may write on stdout:
// more than a run's large results hold in all (run.Limits.MaxHandleBytes,
// 64 MB), JSON-escaped. A longer line is dropped as it is read, never held
// whole: an upstream writing one endless line made the hub hold 3 GB for
// 1 GB of it, and would have taken all the machine's memory.
const maxProtocolLine = 192 << 20

// maxStrayLogs is how many of a process's non-protocol lines are logged;
// the rest are only counted.
const maxStrayLogs = 20

// next returns the next protocol line, without its newline, or the error
// that ended the stream.
func (r *protocolReader) next() ([]byte, error) {
	for {
		if r.err != nil {
			return nil, r.err
		}
		line, size, err := r.readLine()
		r.err = err
		if t := bytes.TrimSpace(line); size > len(line) || len(t) > 0 {
			if size == len(line) && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
				return t, nil
			}
			r.p.mu.Lock()
			r.p.strays++
			n := r.p.strays
			r.p.mu.Unlock()
			switch {
			case n > maxStrayLogs:
				// Counted (errors say how many), not logged: an upstream
				// printing a million lines wrote a million to the
				// hub's stderr, which the harness keeps.
			case n == maxStrayLogs:
				r.log.Warn("upstream keeps writing non-protocol lines on stdout; dropping the rest without logging them", "namespace", r.ns, "logged", n-1)
			case size > len(line):
				r.log.Warn("upstream wrote a line longer than the hub reads on stdout; dropped", "namespace", r.ns, "bytes", size, "limit", r.limit())
			default:
				r.log.Warn("upstream wrote a non-protocol line on stdout; dropped", "namespace", r.ns, "line", truncate(string(t), 200))
			}
		}
	}
}

func (r *protocolReader) limit() int {
	if r.max > 0 {
		return r.max
	}
	return maxProtocolLine
}

// readLine reads the next line and its size; a line over the limit is read
// to its end and dropped as it goes (line is nil, size says how long it was).
func (r *protocolReader) readLine() (line []byte, size int, err error) {
	for {
		frag, err := r.br.ReadSlice('\n')
		size += len(frag)
		if size <= r.limit() {
			if len(line)+len(frag) > cap(line) {
				// Doubled, not append's quarter: a 30 MB line took 150 MB.
				line = append(make([]byte, 0, max(2*cap(line), len(line)+len(frag))), line...)
			}
			line = append(line, frag...)
		} else {
			line = nil
		}
		if err != bufio.ErrBufferFull {
			return line, size, err
		}
	}
}

func (r *protocolReader) Close() error { return r.raw.Close() }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitText describes how the process ended, for errors: "the server " +
// exitText().
func (p *process) exitText() string {
	if !p.exited() {
		return "is still running"
	}
	if p.err == nil {
		return "exited with status 0"
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) && ee.ExitCode() < 0 {
		return "was killed (" + p.err.Error() + ")"
	}
	return "exited (" + p.err.Error() + ")"
}

// stop ends the process group: close stdin and wait half a second, then
// SIGTERM and a second, then SIGKILL (1.5 s at most, so a command ends soon
// after its work). It always reaps the process.
func (p *process) stop() {
	_ = p.stdin.Close()
	pgid := p.cmd.Process.Pid
	wait := func(d time.Duration) bool {
		select {
		case <-p.done:
			return true
		case <-time.After(d):
			return false
		}
	}
	if !wait(500 * time.Millisecond) {
		terminateGroup(pgid)
		if !wait(time.Second) {
			killGroup(pgid)
			<-p.done
		}
	}
	// Anything the leader left behind in its group goes too.
	killGroup(pgid)
}

// tail keeps the last n bytes written to it.
type tail struct {
	mu      sync.Mutex
	n       int
	buf     []byte
	written int64 // all bytes written
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.written += int64(len(b))
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.n {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.n:]...)
	}
	return len(b), nil
}

// size is how many bytes were written in all.
func (t *tail) size() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written
}

// last is the last line written that is not blank, after its last
// carriage return, cut at 300 bytes.
func (t *tail) last() string {
	t.mu.Lock()
	text := string(t.buf)
	t.mu.Unlock()
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if j := strings.LastIndexByte(strings.TrimRight(l, "\r"), '\r'); j >= 0 {
			l = l[j+1:]
		}
		if l = strings.TrimSpace(l); l != "" {
			return truncate(l, 300)
		}
	}
	return ""
}

// Lines returns up to the last n informative lines, for a person: blank
// lines and stack frames ("    at f (file:1:2)") are left out, each line is
// cut at 300 bytes, and when none of them names an error, the last line
// before them that does comes first (node's "Error: Cannot find module …"
// is followed by more lines than n).
func (t *tail) Lines(n int) string {
	t.mu.Lock()
	text := string(t.buf)
	t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimRight(l, " \t\r")
		if s := strings.TrimSpace(l); s == "" || strings.HasPrefix(s, "at ") {
			continue
		}
		lines = append(lines, truncate(l, 300))
	}
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	last := lines[len(lines)-n:]
	if slices.ContainsFunc(last, namesError) {
		return strings.Join(last, "\n")
	}
	for i := len(lines) - n - 1; i >= 0; i-- {
		if namesError(lines[i]) {
			return strings.Join(append([]string{lines[i], "…"}, last[1:]...), "\n")
		}
	}
	return strings.Join(last, "\n")
}

// namesError reports whether a line of stderr looks like the error itself.
func namesError(line string) bool {
	l := strings.ToLower(line)
	return strings.Contains(l, "error") || strings.Contains(l, "fatal") || strings.Contains(l, "cannot ") || strings.Contains(l, "not found")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

var errExited = errors.New("the server exited")

var errPoolClosed = errors.New("the hub is shutting down")

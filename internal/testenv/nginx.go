//go:build linux

package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

const nginxHint = "nginx is not installed: scripts/setup.sh --tests installs it (Debian's nginx package)"

// Nginx is an nginx the test started in a temporary folder, listening on a
// free loopback port, with a site configuration the test gave.
type Nginx struct {
	Bin  string // the nginx binary
	Dir  string // the temporary folder: nginx.conf, site.conf, the logs
	Port int    // the port the site listens on

	cmd    *exec.Cmd
	exited chan error // cmd's Wait
}

// NginxBin finds nginx: Debian's /usr/sbin/nginx, else one on PATH.
func NginxBin() (string, error) {
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx", nil
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	return "", errors.New(nginxHint)
}

// StartNginx starts nginx in a temporary folder with the http-level
// configuration site(port) (upstreams, maps, servers: what a file in
// /etc/nginx/conf.d/ holds), port a free loopback port the site must
// listen on; it is stopped when the test ends. The main configuration
// around it keeps everything in the folder (pid, logs, temporary files),
// runs one worker in the foreground and logs errors at info level. As
// root, nginx runs as PostgresUser (created when missing), which owns the
// folder. Without nginx the test fails when CI=true and is skipped
// elsewhere, saying that scripts/setup.sh --tests installs it.
func StartNginx(t testing.TB, site func(port int) string) *Nginx {
	t.Helper()
	bin, err := NginxBin()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	n := &Nginx{Bin: bin}
	var cred *syscall.Credential
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = postgresUser(t)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// Not t.TempDir: its parents are root's, mode 700, which the
	// unprivileged user cannot enter.
	dir, err := os.MkdirTemp("", "capabilities-nginx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	n.Dir = dir
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "tmp")} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	main := fmt.Sprintf(`# Written by internal/testenv.StartNginx: everything in %[1]s.
daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 512; }
http {
    # One line a request: what the tests check routing by.
    log_format routing '$request_method $uri $status "$upstream_addr" "$http_mcp_session_id" "$http_mcp_protocol_version"';
    access_log %[1]s/access.log routing;
    client_body_temp_path %[1]s/tmp/body;
    proxy_temp_path %[1]s/tmp/proxy;
    fastcgi_temp_path %[1]s/tmp/fastcgi;
    uwsgi_temp_path %[1]s/tmp/uwsgi;
    scgi_temp_path %[1]s/tmp/scgi;
    include %[1]s/site.conf;
}
`, dir)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		n.Port = FreePort(t)
		if err := os.WriteFile(filepath.Join(dir, "site.conf"), []byte(site(n.Port)), 0o644); err != nil {
			t.Fatal(err)
		}
		err := n.start(cred)
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { n.Stop(t) })
	return n
}

// start runs nginx and waits until its port accepts connections.
func (n *Nginx) start(cred *syscall.Credential) error {
	logf, err := os.OpenFile(filepath.Join(n.Dir, "nginx.out"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	// -e: the error log before the configuration is read (the built-in
	// /var/log/nginx/error.log is not the unprivileged user's).
	cmd := exec.Command(n.Bin, "-p", n.Dir, "-c", filepath.Join(n.Dir, "nginx.conf"), "-e", filepath.Join(n.Dir, "error.log"))
	cmd.Dir = n.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting nginx: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port))
	deadline := time.Now().Add(Timeout(20 * time.Second))
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			n.cmd, n.exited = cmd, exited
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("nginx exited at start (%v):\n%s", werr, n.Logs())
		default:
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			return fmt.Errorf("nginx did not accept connections on %s in time: %v\n%s", addr, err, n.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Logs returns what nginx wrote to its error log and its output.
func (n *Nginx) Logs() string {
	var s string
	for _, f := range []string{"nginx.out", "error.log"} {
		b, _ := os.ReadFile(filepath.Join(n.Dir, f))
		s += string(b)
	}
	return s
}

// AccessLog returns nginx's access log: a line a request, with the
// method, the path, the status, then quoted: the upstream addresses tried
// ("a, b" when the first refused), the Mcp-Session-Id and
// MCP-Protocol-Version headers sent ("-" when none).
func (n *Nginx) AccessLog() string {
	b, _ := os.ReadFile(filepath.Join(n.Dir, "access.log"))
	return string(b)
}

// URL is http://127.0.0.1:<port>.
func (n *Nginx) URL() string { return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port)) }

// Stop shuts nginx down (SIGTERM: a fast shutdown, its workers with it).
func (n *Nginx) Stop(t testing.TB) {
	t.Helper()
	if n.cmd == nil {
		return
	}
	cmd, exited := n.cmd, n.exited
	n.cmd = nil
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(Timeout(20 * time.Second)):
		t.Errorf("nginx did not stop on SIGTERM in time; killed it")
	}
	// The workers leave with the master; any left are killed with its group.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

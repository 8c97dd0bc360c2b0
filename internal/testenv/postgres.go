//go:build linux

package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresUser is the system user the tests run PostgreSQL as when they
// run as root (PostgreSQL refuses to run as root). StartPostgres creates it
// when it is missing.
const PostgresUser = "capabilities-test"

const postgresHint = "PostgreSQL is not installed: scripts/setup.sh --tests installs it (Debian's postgresql package)"

// Postgres is a PostgreSQL server the test started in a temporary folder,
// listening on a free loopback port, with password authentication.
type Postgres struct {
	Bin      string // the folder of postgres and initdb
	Dir      string // the temporary folder (the data is in Dir/data)
	Port     int
	User     string // the database superuser
	Password string

	cred   *syscall.Credential // the unprivileged user to run as (nil: this one)
	cmd    *exec.Cmd
	exited chan error // cmd's Wait
	n      atomic.Int64
}

// PostgresBin finds the folder of PostgreSQL's server binaries: Debian's
// /usr/lib/postgresql/<version>/bin (the newest version), else the folder
// of a postgres on PATH.
func PostgresBin() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	sort.Slice(matches, func(i, j int) bool { return pgVersion(matches[i]) < pgVersion(matches[j]) })
	for i := len(matches) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(filepath.Dir(matches[i]), "initdb")); err == nil {
			return filepath.Dir(matches[i]), nil
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	return "", errors.New(postgresHint)
}

func pgVersion(bin string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(filepath.Dir(bin))), 64)
	return v
}

// StartPostgres initializes a database cluster in a temporary folder and
// starts PostgreSQL on it, stopped when the test ends. Without PostgreSQL
// the test fails when CI=true and is skipped elsewhere, saying that
// scripts/setup.sh --tests installs it. As root it runs PostgreSQL as
// PostgresUser (created when missing), which owns the folder.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	bin, err := PostgresBin()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	p := &Postgres{Bin: bin, User: "capabilities", Password: "test-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	var uid, gid int = os.Getuid(), os.Getgid()
	if os.Getuid() == 0 {
		uid, gid = postgresUser(t)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// Not t.TempDir: its parents are root's, mode 700, which the
	// unprivileged user cannot enter.
	dir, err := os.MkdirTemp("", "capabilities-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	p.Dir = dir
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(p.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(pwfile, uid, gid); err != nil {
		t.Fatal(err)
	}
	initdb := p.command(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", p.User,
		"--pwfile="+pwfile, "--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	_ = os.Remove(pwfile)
	for attempt := 0; ; attempt++ {
		p.Port = FreePort(t)
		err := p.start()
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { p.Stop(t) })
	return p
}

// postgresUser returns the uid and gid of PostgresUser, creating the
// system user when missing.
func postgresUser(t testing.TB) (int, int) {
	t.Helper()
	u, err := user.Lookup(PostgresUser)
	if err != nil {
		out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PostgresUser).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "already exists") {
			t.Fatalf("creating the system user %s to run PostgreSQL as (root cannot): useradd: %v\n%s", PostgresUser, err, out)
		}
		if u, err = user.Lookup(PostgresUser); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid
}

func (p *Postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: p.cred}
	return cmd
}

// start runs postgres on the cluster and waits until it accepts
// connections.
func (p *Postgres) start() error {
	logf, err := os.OpenFile(filepath.Join(p.Dir, "postgres.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := p.command(filepath.Join(p.Bin, "postgres"), "-D", filepath.Join(p.Dir, "data"),
		"-p", strconv.Itoa(p.Port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+p.Dir,
		"-c", "max_connections=200", "-c", "shared_buffers=32MB")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(Timeout(20 * time.Second))
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := pgx.Connect(ctx, p.URL("postgres"))
		cancel()
		if err == nil {
			_ = c.Close(context.Background())
			p.cmd, p.exited = cmd, exited
			return nil
		}
		select {
		case werr := <-exited:
			log, _ := os.ReadFile(filepath.Join(p.Dir, "postgres.log"))
			return fmt.Errorf("postgres exited at start (%v):\n%s", werr, log)
		default:
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			log, _ := os.ReadFile(filepath.Join(p.Dir, "postgres.log"))
			return fmt.Errorf("postgres did not accept connections in time: %v\n%s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop shuts PostgreSQL down (a fast shutdown: connections are ended). It
// can be started again with Start.
func (p *Postgres) Stop(t testing.TB) {
	t.Helper()
	if p.cmd == nil {
		return
	}
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGINT) // the postmaster: a fast shutdown
	select {
	case <-exited:
	case <-time.After(Timeout(20 * time.Second)):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		t.Errorf("postgres did not stop on SIGINT in time; killed it")
	}
}

// Start starts PostgreSQL again after Stop, on the same port.
func (p *Postgres) Start(t testing.TB) {
	t.Helper()
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
}

// URL is the URL of database db as the superuser, over TCP.
func (p *Postgres) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(p.User, p.Password), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// NewDatabase creates an empty database and returns its URL.
func (p *Postgres) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d", p.n.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), Timeout(30*time.Second))
	defer cancel()
	c, err := pgx.Connect(ctx, p.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return p.URL(name)
}

package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
	"github.com/capabilities-sh/capabilities/store/storetest"
	"github.com/jackc/pgx/v5"
)

// holderEnv makes the test binary a process that holds a claim until it
// is killed (TestPostgres/DeadHolderLosesClaim).
const holderEnv = "CAPABILITIES_TEST_PG_HOLDER"

func TestMain(m *testing.M) {
	if u := os.Getenv(holderEnv); u != "" {
		hold(u)
		return
	}
	os.Exit(testenv.RunLeavingNothing(m))
}

func hold(u string) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, u, postgres.LeaseTTL(time.Second))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if _, err := s.Hold(ctx, store.Runs, "r1"); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("held")
	select {}
}

// fresh makes an empty database, migrates it and opens a store on it.
func fresh(t *testing.T, pg *testenv.Postgres, opts ...postgres.Option) (*postgres.Store, string) {
	t.Helper()
	u := pg.NewDatabase(t)
	ctx := context.Background()
	if err := postgres.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	return open(t, u, opts...), u
}

func open(t *testing.T, u string, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), u, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// superuser runs SQL on the database at u.
func superuser(t *testing.T, u, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(30*time.Second))
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
}

func TestPostgres(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx := context.Background()

	t.Run("Conformance", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			s, _ := fresh(t, pg)
			return s
		})
	})

	t.Run("Shared", func(t *testing.T) {
		// Two Stores on one database: two pools, as two processes have.
		storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
			a, u := fresh(t, pg)
			return a, open(t, u)
		})
	})

	t.Run("MigrateIdempotentAndRequired", func(t *testing.T) {
		u := pg.NewDatabase(t)
		_, err := postgres.Open(ctx, u)
		if err == nil || !strings.Contains(err.Error(), "capabilities hub init") {
			t.Fatalf("Open of a database never migrated = %v; want an error saying to run capabilities hub init", err)
		}
		for range 2 {
			if err := postgres.Migrate(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		s := open(t, u)
		if err := s.Put(ctx, store.Sources, "a", map[string]int{"n": 1}); err != nil {
			t.Fatal(err)
		}
		// Migrating again keeps the records.
		if err := postgres.Migrate(ctx, u); err != nil {
			t.Fatal(err)
		}
		if err := s.Get(ctx, store.Sources, "a", &map[string]int{}); err != nil {
			t.Errorf("a record after Migrate ran again: %v", err)
		}
	})

	t.Run("NewerSchemaRefused", func(t *testing.T) {
		_, u := fresh(t, pg)
		newer := postgres.SchemaVersion() + 1
		superuser(t, u, `INSERT INTO capabilities_migrations (version_id, is_applied) VALUES ($1, true)`, newer)
		want := fmt.Sprintf("schema (version %d) was written by a newer capabilities; this build reads up to version %d", newer, postgres.SchemaVersion())
		if _, err := postgres.Open(ctx, u); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open of a newer schema = %v; want an error containing %q", err, want)
		}
		if err := postgres.Migrate(ctx, u); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Migrate of a newer schema = %v; want an error containing %q", err, want)
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		good := pg.NewDatabase(t)
		if err := postgres.Migrate(ctx, good); err != nil {
			t.Fatal(err)
		}
		gu, _ := url.Parse(good)
		wrongPassword := *gu
		wrongPassword.User = url.UserPassword(pg.User, "not-the-password")
		noDB := *gu
		noDB.Path = "/nosuchdb"
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closedPort := l.Addr().(*net.TCPAddr).Port
		l.Close()
		for _, tc := range []struct {
			name, url, want string
		}{
			{"malformed", "postgres://u:sekrit@127.0.0.1:notaport/db", "reading the store URL"},
			{"not postgres", "mysql://u:sekrit@127.0.0.1/db", "reading the store URL"},
			{"unreachable", "postgres://u:sekrit@127.0.0.1:" + strconv.Itoa(closedPort) + "/db?connect_timeout=5", "PostgreSQL cannot be reached (is it running, and are the host and port in the store URL right?)"},
			{"wrong password", wrongPassword.String(), `PostgreSQL refused user "capabilities"`},
			{"no database", noDB.String(), `database "nosuchdb" does not exist: create the database (createdb) or fix its name in the store URL`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, f := range []func() error{
					func() error { _, err := postgres.Open(ctx, tc.url); return err },
					func() error { return postgres.Migrate(ctx, tc.url) },
				} {
					err := f()
					t.Log(err)
					if err == nil || !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("got %v; want an error containing %q", err, tc.want)
					}
					for _, secret := range []string{"sekrit", "not-the-password", pg.Password} {
						if strings.Contains(err.Error(), secret) {
							t.Errorf("the error shows the password: %v", err)
						}
					}
				}
			})
		}
	})

	t.Run("LiveHolderKeepsClaim", func(t *testing.T) {
		a, u := fresh(t, pg, postgres.LeaseTTL(600*time.Millisecond))
		b := open(t, u)
		release, err := a.Hold(ctx, store.Runs, "r1")
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		time.Sleep(2 * time.Second) // three leases long: renewed
		if _, err := b.Hold(ctx, store.Runs, "r1"); !errors.Is(err, store.ErrBusy) {
			t.Errorf("Hold while a live holder renews its lease = %v, want ErrBusy", err)
		}
	})

	t.Run("DeadHolderLosesClaim", func(t *testing.T) {
		s, u := fresh(t, pg)
		holder := exec.Command(os.Args[0], "-test.run=^$")
		holder.Env = append(os.Environ(), holderEnv+"="+u)
		holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := holder.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := holder.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL); _ = holder.Wait() }()
		line, _ := bufio.NewReader(out).ReadString('\n')
		if line != "held\n" {
			t.Fatalf("the holder process said %q", line)
		}
		if _, err := s.Hold(ctx, store.Runs, "r1"); !errors.Is(err, store.ErrBusy) {
			t.Fatalf("Hold while another process holds = %v, want ErrBusy", err)
		}
		if held, err := s.Held(ctx, store.Runs, "r1"); err != nil || !held {
			t.Fatalf("Held while another process holds = %v, %v", held, err)
		}
		_ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
		_ = holder.Wait()
		deadline := time.Now().Add(testenv.Timeout(20 * time.Second))
		for {
			release, err := s.Hold(ctx, store.Runs, "r1")
			if err == nil {
				release()
				break
			}
			if !errors.Is(err, store.ErrBusy) || time.Now().After(deadline) {
				t.Fatalf("Hold after its holder was killed: %v (the claim should end when its lease expires)", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("LostConnection", func(t *testing.T) {
		s, u := fresh(t, pg)
		if err := s.Put(ctx, store.Sources, "a", map[string]int{"n": 1}); err != nil {
			t.Fatal(err)
		}
		dbname := strings.TrimPrefix(must(url.Parse(u)).Path, "/")
		superuser(t, pg.URL("postgres"), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, dbname)
		err := s.Get(ctx, store.Sources, "a", &map[string]int{})
		t.Logf("the call on an ended connection: %v", err)
		if err != nil && !strings.Contains(err.Error(), "PostgreSQL ended the connection") {
			t.Errorf("the call on a connection that was ended = %v; want a clear error (or success)", err)
		}
		if err := s.Get(ctx, store.Sources, "a", &map[string]int{}); err != nil {
			t.Errorf("the next call: %v", err)
		}
	})

	// Last: it stops the server.
	t.Run("Restart", func(t *testing.T) {
		s, _ := fresh(t, pg)
		if err := s.Put(ctx, store.Sources, "a", map[string]int{"n": 1}); err != nil {
			t.Fatal(err)
		}
		pg.Stop(t)
		for range 2 {
			err := s.Get(ctx, store.Sources, "a", &map[string]int{})
			t.Logf("a call while PostgreSQL is down: %v", err)
			if err == nil || !(strings.Contains(err.Error(), "PostgreSQL cannot be reached") || strings.Contains(err.Error(), "PostgreSQL ended the connection")) {
				t.Errorf("a call while PostgreSQL is down = %v; want a clear error", err)
			}
		}
		pg.Start(t)
		if err := s.Get(ctx, store.Sources, "a", &map[string]int{}); err != nil {
			t.Errorf("the first call once PostgreSQL is back: %v", err)
		}
		if err := s.Update(ctx, store.Sources, "a", func(b []byte) ([]byte, error) { return b, nil }); err != nil {
			t.Errorf("an update once PostgreSQL is back: %v", err)
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The hub on PostgreSQL against the file store, client-measured (issue 40,
// "Benchmarks"). Each benchmark starts its own PostgreSQL (Debian's, in a
// temporary folder: internal/testenv.StartPostgres) and selects it for
// every hub process with CAPABILITIES_STORE, as a person does; the file
// store's hub is the same hub in a hub folder. The two are measured in
// alternating rounds (BENCH_ROUNDS, 3), so that what else runs on the
// machine meets both alike.

// storeHub is a hub whose records are in the file store (url "") or in
// the PostgreSQL database at url.
type storeHub struct {
	*hubEnv
	name string // "file" or "postgres"
	url  string
}

// useStore makes CAPABILITIES_STORE url for every process started from now
// on ("" for the hub folder's store).
func useStore(b *testing.B, url string) { b.Setenv("CAPABILITIES_STORE", url) }

// newStoreHub initialises a hub (hub init) on the file store or on url.
func newStoreHub(b *testing.B, url string) *storeHub {
	b.Helper()
	useStore(b, url)
	name := "file"
	if url != "" {
		name = "postgres"
	}
	return &storeHub{hubEnv: newHub(b), name: name, url: url}
}

// open opens the hub's store in this process.
func (h *storeHub) open(b *testing.B) store.Store {
	b.Helper()
	if h.url == "" {
		st, err := store.Open(filepath.Join(h.home, "hub"))
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	st, err := postgres.Open(context.Background(), h.url)
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// putCorpus writes the 19 corpus servers' manifests into st, as sources
// that would run "node server.js" if anything started them (addCorpusCopies
// for any store).
func putCorpus(b *testing.B, st store.Store) {
	b.Helper()
	ctx := context.Background()
	for _, m := range testenv.CorpusManifests(b) {
		src := model.Source{Namespace: m.Namespace, Kind: model.KindStdio, Command: "node", Args: []string{"server.js"}}
		if err := st.Put(ctx, store.Sources, m.Namespace, src); err != nil {
			b.Fatal(err)
		}
		if err := st.Put(ctx, store.Manifests, m.Namespace, hub.Manifest{Manifest: m, Health: "ok", CheckedAt: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
}

// closeStore closes a store opened by open.
func closeStore(b *testing.B, st store.Store) {
	b.Helper()
	if c, ok := st.(interface{ Close() error }); ok {
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func rounds() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// BenchmarkStoreTSClient: BenchmarkTSClient's "corpus" hub (the scripted
// upstream as "up" and the 19 corpus manifests, 501 tools) on the file
// store and on PostgreSQL, over stdio and HTTP, rounds alternating: the
// TypeScript SDK 1.x client's p50/p99 of trivial executes, one-call
// executes, search and the direct call, back to back and BENCH_GAP_MS
// apart (testdata/clients/bench_client.mjs), BENCH_N (100 here) of each.
//
//	go test ./engine/mcpserver/e2e -run '^$' -bench BenchmarkStoreTSClient -benchtime 1x   # BENCH_ROUNDS (3), BENCH_N (100)
func BenchmarkStoreTSClient(b *testing.B) {
	pg := testenv.StartPostgres(b)
	db := pg.NewDatabase(b)
	hubs := []*storeHub{newStoreHub(b, ""), newStoreHub(b, db)}
	direct, _ := json.Marshal(testenv.Scripted(b))
	envs := map[*storeHub][]string{}
	for _, h := range hubs {
		useStore(b, h.url)
		h.addScripted("up", false)
		st := h.open(b)
		putCorpus(b, st)
		closeStore(b, st)
		if h.url == "" {
			ageStore(b, h.hubEnv)
		}
		url, token := h.serveHTTP()
		envs[h] = []string{"BENCH_TOOL=up.echo", "BENCH_DIRECT=" + string(direct), "CAPABILITIES_STORE=" + h.url, "BENCH_URL=" + url, "BENCH_TOKEN=" + token}
	}
	for r := 1; r <= rounds(); r++ {
		for _, mode := range []string{"stdio", "http"} {
			for _, h := range hubs {
				b.Run(mode+"/"+h.name, func(b *testing.B) {
					env := envs[h]
					if mode == "stdio" {
						env = env[:3]
					}
					if os.Getenv("BENCH_N") == "" {
						env = append(slices.Clone(env), "BENCH_N=100")
					}
					for b.Loop() {
						var res struct {
							StartMs, FirstExecuteMs float64
							Series                  map[string]struct{ N, P50, P99 float64 }
						}
						h.client(&res, env, "bench_client.mjs")
						names := slices.Sorted(maps.Keys(res.Series))
						line := fmt.Sprintf("load average %s; start %.1f ms, first execute %.1f ms", loadAvg(), res.StartMs, res.FirstExecuteMs)
						for _, name := range names {
							s := res.Series[name]
							b.ReportMetric(s.P50, name+"-p50-ms")
							b.ReportMetric(s.P99, name+"-p99-ms")
							line += fmt.Sprintf("; %s p50 %.2f p99 %.2f (n %.0f)", name, s.P50, s.P99, s.N)
						}
						b.Log(line)
					}
				})
			}
		}
	}
}

// serveN starts n `hub serve --http` processes on h's store, each in a
// CAPABILITIES_HOME of its own (as on n machines; the first is h's), and
// returns their URLs and bearer tokens.
func serveN(b *testing.B, h *storeHub, n int) (urls, tokens []string) {
	b.Helper()
	for i := range n {
		e := h.hubEnv
		if i > 0 {
			work := b.TempDir()
			e = &hubEnv{t: b, home: filepath.Join(work, "home"), work: work}
		}
		useStore(b, h.url)
		u, tok := e.serveHTTP()
		urls, tokens = append(urls, u), append(tokens, tok)
	}
	return urls, tokens
}

// connectRoundRobin opens clients go-sdk sessions, client i on process
// i mod len(urls).
func connectRoundRobin(ctx context.Context, b *testing.B, urls, tokens []string, clients int) []*mcp.ClientSession {
	b.Helper()
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		p := i % len(urls)
		hc := &http.Client{Transport: bearer{tokens[p], &http.Transport{MaxIdleConnsPerHost: clients}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("load-%d", i), Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: urls[p], HTTPClient: hc, DisableStandaloneSSE: true}, nil)
		if err != nil {
			b.Fatalf("client %d of process %d: %v", i, p, err)
		}
		b.Cleanup(func() { cs.Close() })
		sessions[i] = cs
	}
	return sessions
}

// BenchmarkStoreHTTPThroughput is BenchmarkHTTPThroughput (32 go-sdk
// clients, BENCH_N executes between them, after 64 to warm up) on the file
// store's one `hub serve --http` and on 1, 2 and 3 `hub serve --http`
// processes sharing one PostgreSQL, the clients spread round-robin over the
// processes' own ports (no proxy), rounds alternating. All three
// PostgreSQL processes run throughout (an idle one costs little); "pg-1"
// sends to the first only.
//
//	go test ./engine/mcpserver/e2e -run '^$' -bench BenchmarkStoreHTTPThroughput -benchtime 1x   # BENCH_ROUNDS (3), BENCH_N (1000)
func BenchmarkStoreHTTPThroughput(b *testing.B) {
	const clients = 32
	total := 1000
	if n, err := strconv.Atoi(os.Getenv("BENCH_N")); err == nil && n > 0 {
		total = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(30*time.Minute))
	defer cancel()
	pg := testenv.StartPostgres(b)
	db := pg.NewDatabase(b)
	file := newStoreHub(b, "")
	file.addScripted("reader", false)
	pgh := newStoreHub(b, db)
	pgh.addScripted("reader", false)
	fu, ft := serveN(b, file, 1)
	pu, pt := serveN(b, pgh, 3)
	type setup struct {
		name     string
		sessions []*mcp.ClientSession
	}
	setups := []setup{
		{"file-1", connectRoundRobin(ctx, b, fu, ft, clients)},
		{"pg-1", connectRoundRobin(ctx, b, pu[:1], pt[:1], clients)},
		{"pg-2", connectRoundRobin(ctx, b, pu[:2], pt[:2], clients)},
		{"pg-3", connectRoundRobin(ctx, b, pu, pt, clients)},
	}
	for r := 1; r <= rounds(); r++ {
		for _, c := range []struct{ name, code string }{
			{"trivial", `return 1`},
			{"one-call", `return await reader.echo({message: "load"})`},
		} {
			for _, s := range setups {
				b.Run(c.name+"/"+s.name, func(b *testing.B) {
					for b.Loop() {
						load(ctx, b, s.sessions, c.code, 64)
						res := load(ctx, b, s.sessions, c.code, total)
						b.ReportMetric(res.rate, "executes/s")
						b.ReportMetric(ms(res.pct(0.50)), "p50-ms")
						b.ReportMetric(ms(res.pct(0.99)), "p99-ms")
						b.Logf("%s, %d clients, %d executes of %s: %.0f/s, p50 %.1f p90 %.1f p99 %.1f max %.1f ms; load average %s",
							s.name, clients, total, c.name, res.rate, ms(res.pct(0.50)), ms(res.pct(0.90)), ms(res.pct(0.99)), ms(res.lat[len(res.lat)-1]), loadAvg())
					}
				})
			}
		}
	}
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// pgFootprint is what the hub's tables hold at one instant.
type pgFootprint struct {
	rows      map[string]int64 // table[/kind] → rows
	dataBytes map[string]int64 // table[/kind] → bytes of data or line
	relBytes  map[string]int64 // table → pg_total_relation_size (heap, indexes, TOAST)
	wal       int64            // pg_current_wal_lsn, bytes
}

func footprint(ctx context.Context, b *testing.B, c *pgx.Conn) pgFootprint {
	b.Helper()
	time.Sleep(time.Second) // the hub's records written after the answers
	f := pgFootprint{rows: map[string]int64{}, dataBytes: map[string]int64{}, relBytes: map[string]int64{}}
	q := func(sql string, scan func(pgx.Rows) error) {
		rows, err := c.Query(ctx, sql)
		if err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
		for rows.Next() {
			if err := scan(rows); err != nil {
				b.Fatal(err)
			}
		}
		if rows.Err() != nil {
			b.Fatal(rows.Err())
		}
	}
	var k string
	var n, size int64
	q(`SELECT 'records/' || kind, count(*), coalesce(sum(octet_length(data)), 0) FROM records GROUP BY kind
UNION ALL SELECT 'log_lines/' || kind, count(*), coalesce(sum(octet_length(line)), 0) FROM log_lines GROUP BY kind
UNION ALL SELECT 'holds', count(*), 0 FROM holds`, func(r pgx.Rows) error {
		if err := r.Scan(&k, &n, &size); err != nil {
			return err
		}
		f.rows[k], f.dataBytes[k] = n, size
		return nil
	})
	q(`SELECT t, pg_total_relation_size(t::regclass) FROM unnest(ARRAY['records', 'log_lines', 'holds']) AS t`, func(r pgx.Rows) error {
		if err := r.Scan(&k, &size); err != nil {
			return err
		}
		f.relBytes[k] = size
		return nil
	})
	if err := c.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'`).Scan(&f.wal); err != nil {
		b.Fatal(err)
	}
	return f
}

// statements lists what pg_stat_statements counted since its last reset,
// per run, and resets it.
func statements(ctx context.Context, b *testing.B, c *pgx.Conn, runs int) string {
	b.Helper()
	rows, err := c.Query(ctx, `SELECT calls, wal_bytes, regexp_replace(query, '\s+', ' ', 'g') FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat%' AND query NOT LIKE '%pg_total_relation_size%' AND query NOT LIKE '%pg_current_wal_lsn%'
ORDER BY calls DESC`)
	if err != nil {
		b.Fatal(err)
	}
	var out strings.Builder
	for rows.Next() {
		var calls int64
		var wal float64
		var q string
		if err := rows.Scan(&calls, &wal, &q); err != nil {
			b.Fatal(err)
		}
		if len(q) > 110 {
			q = q[:110] + "…"
		}
		fmt.Fprintf(&out, "\n    %6.2f a run (%5.0f WAL bytes a run)  %s", float64(calls)/float64(runs), wal/float64(runs), q)
	}
	if rows.Err() != nil {
		b.Fatal(rows.Err())
	}
	if _, err := c.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		b.Fatal(err)
	}
	return out.String()
}

func (f pgFootprint) per(b *testing.B, before pgFootprint, what string, runs int) {
	b.Helper()
	keys := map[string]bool{}
	for k := range f.rows {
		keys[k] = true
	}
	for k := range before.rows {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var line strings.Builder
	fmt.Fprintf(&line, "%s, %d runs, a run:", what, runs)
	for _, k := range names {
		dr, db := f.rows[k]-before.rows[k], f.dataBytes[k]-before.dataBytes[k]
		if dr == 0 && db == 0 {
			continue
		}
		fmt.Fprintf(&line, " %s %+.2f rows %+.0f B;", k, float64(dr)/float64(runs), float64(db)/float64(runs))
	}
	for _, t := range []string{"records", "log_lines", "holds"} {
		fmt.Fprintf(&line, " %s on disk %+.0f B;", t, float64(f.relBytes[t]-before.relBytes[t])/float64(runs))
	}
	wal := float64(f.wal-before.wal) / float64(runs)
	fmt.Fprintf(&line, " WAL %.0f B", wal)
	b.ReportMetric(wal, what+"-wal-B/run")
	b.ReportMetric(float64(f.relBytes["records"]+f.relBytes["log_lines"]-before.relBytes["records"]-before.relBytes["log_lines"])/float64(runs), what+"-disk-B/run")
	b.Log(line.String())
}

// BenchmarkPostgresRunFootprint measures what a run leaves in PostgreSQL
// and what it costs it: rows and bytes per table (the data, and
// pg_total_relation_size with indexes), WAL bytes, and the statements
// (pg_stat_statements: calls and WAL bytes) a run sends, for BENCH_N (500) trivial
// runs, BENCH_N one-call runs through `hub serve --http` (4 go-sdk
// clients), and BENCH_PAUSED (20) runs that ask (a write) and are approved
// with `hub approve` (a CLI process) and so resumed.
//
//	go test ./engine/mcpserver/e2e -run '^$' -bench BenchmarkPostgresRunFootprint -benchtime 1x -v
func BenchmarkPostgresRunFootprint(b *testing.B) {
	n, paused := 500, 20
	if v, err := strconv.Atoi(os.Getenv("BENCH_N")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("BENCH_PAUSED")); err == nil && v > 0 {
		paused = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(30*time.Minute))
	defer cancel()
	pg := testenv.StartPostgres(b)
	su, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := su.Exec(ctx, `ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`); err != nil {
		b.Fatal(err)
	}
	su.Close(ctx)
	pg.Stop(b)
	pg.Start(b)
	db := pg.NewDatabase(b)
	h := newStoreHub(b, db)
	h.addScripted("reader", false)
	h.addScripted("writer", true)
	c, err := pgx.Connect(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `CREATE EXTENSION pg_stat_statements`); err != nil {
		b.Fatal(err)
	}
	urls, tokens := serveN(b, h, 1)
	sessions := connectRoundRobin(ctx, b, urls, tokens, 4)
	for b.Loop() {
		for _, k := range []struct{ name, code string }{
			{"trivial", `return 1`},
			{"one-call", `return await reader.echo({message: "a line of about forty bytes to echo"})`},
		} {
			load(ctx, b, sessions, k.code, 16) // warm-up: the upstream, the prune's mark
			before := footprint(ctx, b, c)
			statements(ctx, b, c, 1)
			load(ctx, b, sessions, k.code, n)
			after := footprint(ctx, b, c)
			b.Logf("%s: statements:%s", k.name, statements(ctx, b, c, n))
			after.per(b, before, k.name, n)
		}
		before := footprint(ctx, b, c)
		statements(ctx, b, c, 1)
		for i := range paused {
			res, err := sessions[0].CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": fmt.Sprintf(`return await writer.record({item: "x%d"})`, i)}})
			if err != nil {
				b.Fatal(err)
			}
			sc, _ := json.Marshal(res.StructuredContent)
			var e struct {
				RunID  string `json:"runId"`
				Status string `json:"status"`
			}
			_ = json.Unmarshal(sc, &e)
			if e.Status != "awaiting_approval" {
				b.Fatalf("a write ended %q, not awaiting_approval: %s", e.Status, sc)
			}
			if out := h.cli("hub", "approve", e.RunID, "--choice", "once"); !strings.Contains(out, "completed") {
				b.Fatalf("hub approve %s: %s", e.RunID, out)
			}
		}
		after := footprint(ctx, b, c)
		b.Logf("paused+resumed: statements:%s", statements(ctx, b, c, paused))
		after.per(b, before, "paused+resumed", paused)
	}
}

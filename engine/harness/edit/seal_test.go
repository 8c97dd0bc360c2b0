package edit

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/google/go-cmp/cmp"
)

// The credentials of the files below, each written in plain text.
const (
	ghToken  = "ghp_0123456789abcdefABCDEF0123456789abcd"
	apiKey   = "sk-test-7f3a9c2e4b1d8f6a0c5e9b3d7f1a2c4e"
	dbPass   = "Zq8vR2mX7kL4pN9w"
	bearer   = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
	awsToken = "AKIAIOSFODNN7EXAMPLE"
)

// secretForms are the ways a credential may be found in a file: as it is,
// base64, JSON-escaped.
func secretForms(v string) []string {
	q, _ := json.Marshal(v)
	return []string{v, base64.StdEncoding.EncodeToString([]byte(v)), strings.Trim(string(q), `"`)}
}

// noCredentialUnder fails t when a file under dir holds one of creds.
func noCredentialUnder(t *testing.T, dir string, creds ...string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, c := range creds {
			for _, f := range secretForms(c) {
				if strings.Contains(string(b), f) {
					t.Errorf("%s holds the credential %.8s… in clear:\n%s", p, c, b)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotHoldsNoCredential: the snapshot of a config keeps none of
// its credentials in clear (environment, header, URL password, argument,
// a token in an entry connect --replace moves out, one written with JSON
// escapes); the secret store holds them, rollback restores every byte and
// disconnect's record of the moved entry reads back as it was.
func TestSnapshotHoldsNoCredential(t *testing.T) {
	key := []string{"mcpServers"}
	for _, tc := range []struct {
		name   string
		format Format
		src    string
		creds  []string
		moved  string // an entry the edit moves out, "" for none
		whole  bool   // kept whole in the vault
	}{
		{"claude.json", JSON, `{
  "numStartups": 3,
  "primaryApiKey": "` + apiKey + `",
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "` + ghToken + `"}
    },
    "db": {"command": "pg-mcp", "args": ["--url", "postgres://me:` + dbPass + `@db.example/app"]},
    "remote": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"Authorization": "` + bearer + `"}}
  }
}
`, []string{apiKey, ghToken, dbPass, bearer}, "github", false},
		{"the same token twice, a comment above the moved entry", JSONC, `{
  "mcpServers": {
    // shared with the other one
    "a": {"command": "x", "env": {"API_KEY": "` + apiKey + `"}},
    "b": {"command": "y", "env": {"OPENAI_API_KEY": "` + apiKey + `"}},
  },
}
`, []string{apiKey}, "a", false},
		{"written with JSON escapes", JSON, `{"mcpServers": {"s": {"command": "x", "env": {"AWS_ACCESS_KEY_ID": "\u0041KIAIOSFODNN7EXAMPLE"}}}}`, []string{awsToken}, "s", true},
		{"codex config.toml", TOML, `model = "gpt-5"

[mcp_servers.github]
command = "npx"
args = ["-y", "server-github", "--token=` + ghToken + `"]

[mcp_servers.github.env]
OPENAI_API_KEY = "` + apiKey + `"
`, []string{ghToken, apiKey}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "config")
			if err := os.WriteFile(path, []byte(tc.src), 0o600); err != nil {
				t.Fatal(err)
			}
			vault := secret.NewMemory(nil)
			sn := Snaps{Root: filepath.Join(dir, "snapshots"), Vault: vault}
			ctx := context.Background()
			c := Change{Harness: "claude-code", Path: path, Format: tc.format, Edit: func(src []byte) ([]byte, error) {
				if tc.format == TOML {
					return SetEntry(TOML, src, []string{"mcp_servers"}, "capabilities", entry)
				}
				out, err := SetEntry(tc.format, src, key, "capabilities", entry)
				if err == nil && tc.moved != "" {
					out, err = RemoveEntry(tc.format, out, key, tc.moved)
				}
				return out, err
			}}
			if tc.moved != "" {
				c.Replaced = func(src []byte) []Replaced {
					text, _, _ := Take(tc.format, src, key, tc.moved)
					at, _, _ := Where(tc.format, src, key, tc.moved)
					return []Replaced{{Name: tc.moved, Entry: text, Place: at}}
				}
			}
			snap, res, err := sn.Apply(ctx, "connect", []Change{c})
			if err != nil || res[0].Err != nil {
				t.Fatalf("Apply: %v %v", err, res[0].Err)
			}
			noCredentialUnder(t, sn.Root, tc.creds...)
			f := snap.Files[0]
			if len(f.Secrets) == 0 {
				t.Fatal("the snapshot names no entry of the secret store")
			}
			copied := mustRead(t, filepath.Join(snap.Dir(), f.Orig))
			if got := slices.ContainsFunc(f.Secrets, func(ref string) bool { return copied == placeholder(ref) }); got != tc.whole {
				t.Errorf("kept whole: %v, want %v:\n%s", got, tc.whole, copied)
			}
			if tc.moved != "" {
				rs, err := sn.ReplacedAt(ctx, path)
				if err != nil || len(rs) != 1 {
					t.Fatalf("ReplacedAt: %v %v", rs, err)
				}
				want := res[0].Replaced[0]
				want.Snapshot = snap.Dir()
				if diff := cmp.Diff(want, rs[0]); diff != "" {
					t.Errorf("the moved entry read back (-want +got):\n%s", diff)
				}
			}
			if _, rest, err := sn.Rollback(ctx, false); err != nil || rest[0].Err != nil {
				t.Fatalf("Rollback: %v %+v", err, rest)
			}
			if diff := cmp.Diff(tc.src, mustRead(t, path)); diff != "" {
				t.Errorf("rollback (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSnapshotWithoutAVaultRefusesCredentials: with nowhere to keep the
// credentials, the file is not snapshotted, nor written.
func TestSnapshotWithoutAVaultRefusesCredentials(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	src := `{"mcpServers": {"s": {"command": "x", "env": {"GITHUB_TOKEN": "` + ghToken + `"}}}}`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c := setChange(path, nil)
	c.Format = JSON
	_, _, err := Snaps{Root: filepath.Join(dir, "snapshots")}.Apply(context.Background(), "connect", []Change{c})
	if err == nil || !strings.Contains(err.Error(), "no secret store") {
		t.Fatalf("Apply: %v, want an error saying there is no secret store", err)
	}
	if diff := cmp.Diff(src, mustRead(t, path)); diff != "" {
		t.Errorf("the file changed (-want +got):\n%s", diff)
	}
	noCredentialUnder(t, filepath.Join(dir, "snapshots"), ghToken)
}

// TestRollbackKnowsItsHalfFinishedWrite: a process that died after writing
// a file but before recording it (kill -9) left the snapshot saying what
// it was writing: rollback restores that file without --force, and still
// refuses one changed by someone else.
func TestRollbackKnowsItsHalfFinishedWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		after   func(t *testing.T, path string) // what happened to the file after the write
		refused bool
	}{
		{"written, not recorded", func(*testing.T, string) {}, false},
		{"written, then changed by the person", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("{\"mine\": 1}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "mcp.json")
			orig := "{\n  \"mcpServers\": {}\n}\n"
			if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
				t.Fatal(err)
			}
			snaps := filepath.Join(dir, "snapshots")
			snap, _, err := Apply(snaps, "connect", []Change{setChange(path, nil)})
			if err != nil {
				t.Fatal(err)
			}
			// What a process killed between the rename and its last save
			// leaves: Writing saved, Written not.
			snap.Files[0].Written = ""
			if err := snap.save(); err != nil {
				t.Fatal(err)
			}
			tc.after(t, path)
			_, res, err := Rollback(snaps, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := res[0].Err != nil; got != tc.refused {
				t.Fatalf("refused: %v (%v), want %v", got, res[0].Err, tc.refused)
			}
			if !tc.refused {
				if diff := cmp.Diff(orig, mustRead(t, path)); diff != "" {
					t.Errorf("rollback (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestPrune: past the newest Keep, snapshots go with their entries in the
// secret store, except the connect that moved an entry out that no
// disconnect has put back yet, and each file's newest connect.
func TestPrune(t *testing.T) {
	dir := t.TempDir()
	key := []string{"mcpServers"}
	vault := secret.NewMemory(nil)
	sn := Snaps{Root: filepath.Join(dir, "snapshots"), Vault: vault, Keep: 3}
	ctx := context.Background()
	moved := filepath.Join(dir, "moved.json")
	other := filepath.Join(dir, "other.json")
	for _, p := range []string{moved, other} {
		src := `{"mcpServers": {"s": {"command": "x", "env": {"GITHUB_TOKEN": "` + ghToken + `"}}}}`
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// connect --replace of moved.json: needed until a disconnect.
	replace := Change{Harness: "cursor", Path: moved, Format: JSON,
		Edit: func(src []byte) ([]byte, error) { return RemoveEntry(JSON, src, key, "s") },
		Replaced: func(src []byte) []Replaced {
			text, _, _ := Take(JSON, src, key, "s")
			return []Replaced{{Name: "s", Entry: text}}
		}}
	first, _, err := sn.Apply(ctx, "connect", []Change{replace})
	if err != nil {
		t.Fatal(err)
	}
	// Then other.json, changed back and forth: connect, disconnect, …
	var made []*Snapshot
	for i := range 6 {
		kind, v := "connect", "1"
		if i%2 == 1 {
			kind, v = "disconnect", "2"
		}
		c := Change{Harness: "cursor", Path: other, Format: JSON, Edit: func(src []byte) ([]byte, error) {
			return SetEntry(JSON, src, key, "capabilities", Entry{{Key: "command", Value: v}})
		}}
		s, _, err := sn.Apply(ctx, kind, []Change{c})
		if err != nil || s == nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
		made = append(made, s)
	}
	all, err := Snapshots(sn.Root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range all {
		got = append(got, s.Time)
	}
	// Kept: the newest 3 (made[5], [4], [3]), the newest connect of
	// other.json among them already, and the connect --replace.
	want := []string{made[5].Time, made[4].Time, made[3].Time, first.Time}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snapshots kept (-want +got):\n%s", diff)
	}
	for _, s := range made[:3] {
		for _, ref := range s.Files[0].Secrets {
			if _, err := vault.Get(ctx, ref); err == nil {
				t.Errorf("%s of a pruned snapshot is still in the secret store", ref)
			}
		}
	}
	if rs, err := sn.ReplacedAt(ctx, moved); err != nil || len(rs) != 1 || !strings.Contains(rs[0].Entry, ghToken) {
		t.Errorf("ReplacedAt after the prune: %+v %v", rs, err)
	}
	if !slices.ContainsFunc(all, func(s *Snapshot) bool { return s.Time == first.Time }) {
		t.Error("the connect --replace was pruned")
	}
}

// FuzzSeal: whatever a config holds, its sealed copy holds none of the
// credentials Credentials finds in it (the placeholders aside), and
// unsealing gives back every byte.
func FuzzSeal(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"s": {"command": "x", "env": {"GITHUB_TOKEN": "`+ghToken+`"}}}}`), false)
	f.Add([]byte(`{"a": {"args": ["--api-key", "`+apiKey+`", "--url=postgres://u:`+dbPass+`@h/db"]}, "b": "\u0041KIAIOSFODNN7EXAMPLE"}`), false)
	f.Add([]byte("[mcp_servers.s.env]\nAPI_KEY = \""+apiKey+"\"\nTOKEN = '"+ghToken+"'\n"), true)
	f.Fuzz(func(t *testing.T, src []byte, toml bool) {
		if len(src) > maxFuzzInput {
			return
		}
		format := JSONC
		if toml {
			format = TOML
		}
		creds, ok := Credentials(format, src)
		if !ok || len(creds) == 0 {
			return
		}
		vault := secret.NewMemory(nil)
		s := &sealer{vault: vault, base: "snapshot/fuzz/0"}
		sealed, err := s.seal(context.Background(), format, src, creds)
		if err != nil {
			t.Fatal(err)
		}
		bare := string(sealed)
		for _, ref := range s.refs {
			bare = strings.ReplaceAll(bare, placeholder(ref), "\x00")
		}
		for _, c := range creds {
			if strings.Contains(bare, c) {
				t.Fatalf("the sealed copy holds %q:\n%s", c, sealed)
			}
		}
		back, err := unseal(context.Background(), vault, string(sealed), s.refs)
		if err != nil {
			t.Fatal(err)
		}
		if back != string(src) {
			t.Fatalf("unsealed %q, want %q", back, src)
		}
	})
}

// TestPruneSealsOldSnapshots: a snapshot made before snapshots were sealed
// (its copy in clear) is sealed by the next connect's prune, and rollback
// still restores it byte for byte.
func TestPruneSealsOldSnapshots(t *testing.T) {
	dir := t.TempDir()
	vault := secret.NewMemory(nil)
	sn := Snaps{Root: filepath.Join(dir, "snapshots"), Vault: vault}
	ctx := context.Background()
	path := filepath.Join(dir, "mcp.json")
	src := `{"mcpServers": {"s": {"command": "x", "env": {"GITHUB_TOKEN": "` + ghToken + `"}}}}`
	connected, err := SetEntry(JSON, []byte(src), []string{"mcpServers"}, "capabilities", entry)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, connected, 0o600); err != nil {
		t.Fatal(err)
	}
	old := &Snapshot{Time: "20261201T000000.000000000Z", Kind: "connect", dir: filepath.Join(sn.Root, "20261201T000000.000000000Z"),
		Files: []SnapFile{{Harness: "cursor", Path: path, Target: path, Existed: true, Mode: 0o600, SHA256: sum([]byte(src)), Written: sum(connected), Orig: "0.orig"}}}
	if err := os.MkdirAll(old.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old.dir, "0.orig"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := old.save(); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.json")
	if _, _, err := sn.Apply(ctx, "connect", []Change{setChange(other, nil)}); err != nil {
		t.Fatal(err)
	}
	noCredentialUnder(t, sn.Root, ghToken)
	for range 2 {
		if _, res, err := sn.Rollback(ctx, false); err != nil || res[0].Err != nil {
			t.Fatalf("Rollback: %v %+v", err, res)
		}
	}
	if diff := cmp.Diff(src, mustRead(t, path)); diff != "" {
		t.Errorf("rollback of the old snapshot (-want +got):\n%s", diff)
	}
}

package secret

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// stores returns a memory store and a file store in a temp dir, with the
// file store's hub id.
func sealedStores(t *testing.T) map[string]func() (store.Store, string) {
	return map[string]func() (store.Store, string){
		"mem": func() (store.Store, string) { return store.NewMem(), "" },
		"file": func() (store.Store, string) {
			f, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f, f.Hub().ID
		},
	}
}

func mustKEK(t *testing.T) *KEK {
	t.Helper()
	k, err := NewKEK()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustOpen(t *testing.T, st store.Store, hub string, k *KEK) *Sealed {
	t.Helper()
	s, err := OpenSealed(context.Background(), st, hub, k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var testValues = map[string]string{
	"github/default": "ghp_SealedValue-0123456789abcdef",
	"slack/work":     `s3cr3t/T0k+n="q"&x%y`,
	"notion/default": `{"access_token":"ya29.tok-ABC","refresh_token":"1//ref-XYZ"}`,
}

func fill(t *testing.T, s *Sealed) {
	t.Helper()
	for ref, v := range testValues {
		if err := s.Set(context.Background(), ref, v); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll reads every value of testValues through s.
func readAll(s *Sealed) (map[string]string, error) {
	got := map[string]string{}
	for ref := range testValues {
		v, err := s.Get(context.Background(), ref)
		if err != nil {
			return nil, err
		}
		got[ref] = v
	}
	return got, nil
}

func TestSealedRoundTrip(t *testing.T) {
	ctx := context.Background()
	for name, mk := range sealedStores(t) {
		t.Run(name, func(t *testing.T) {
			st, hub := mk()
			k := mustKEK(t)
			s := mustOpen(t, st, hub, k)
			if _, err := s.Get(ctx, "github/default"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get before Set: %v, want ErrNotFound", err)
			}
			fill(t, s)
			got, err := readAll(s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(testValues, got); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
			// Another process (a new Sealed over the same store) reads them.
			got, err = readAll(mustOpen(t, st, hub, k))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(testValues, got); diff != "" {
				t.Errorf("values from a second opener (-want +got):\n%s", diff)
			}
			refs, err := s.Refs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"github/default", "notion/default", "slack/work"}, refs); diff != "" {
				t.Errorf("Refs (-want +got):\n%s", diff)
			}
			if err := s.Set(ctx, "github/default", "replaced"); err != nil {
				t.Fatal(err)
			}
			if v, _ := s.Get(ctx, "github/default"); v != "replaced" {
				t.Errorf("after a second Set: %q", v)
			}
			if err := s.Delete(ctx, "github/default"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, "github/default"); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get after Delete: %v", err)
			}
			if err := s.Delete(ctx, "github/default"); !errors.Is(err, ErrNotFound) {
				t.Errorf("second Delete: %v", err)
			}
			if err := s.Set(ctx, "Bad Ref", "x"); !errors.Is(err, ErrInvalidRef) {
				t.Errorf("Set of a bad ref: %v", err)
			}
			if err := s.Set(ctx, "a/b", ""); !errors.Is(err, ErrEmpty) {
				t.Errorf("Set of an empty value: %v", err)
			}
			// Other blobs are left alone and ignored.
			if err := st.Put(ctx, store.Blobs, "contract-x", map[string]string{"a": "b"}); err != nil {
				t.Fatal(err)
			}
			if refs, err := s.Refs(ctx); err != nil || len(refs) != 2 {
				t.Errorf("Refs with another blob: %v, %v", refs, err)
			}
		})
	}
}

func TestSealedWrongOrMissingKEK(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem()
	k := mustKEK(t)
	fill(t, mustOpen(t, st, "hub1", k))

	other := mustKEK(t)
	other.Source = "CAPABILITIES_KEK_FILE /etc/other"
	_, err := OpenSealed(ctx, st, "hub1", other)
	want := fmt.Sprintf("this hub's secrets were sealed with key-encryption key %s; CAPABILITIES_KEK_FILE /etc/other holds %s", k.Fingerprint(), other.Fingerprint())
	if !errors.Is(err, ErrSealed) || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a wrong KEK: %v\nwant it to say %q", err, want)
	}

	if _, err := OpenSealed(ctx, st, "hub2", k); err == nil || !strings.Contains(err.Error(), "belongs to hub hub1, and this is hub hub2") {
		t.Errorf("another hub's key record: %v", err)
	}

	t.Setenv(EnvKEKFile, "")
	t.Setenv(EnvKEK, "")
	_, err = FromEnv(ctx, st, "hub1")
	if !errors.Is(err, ErrSealed) || !strings.Contains(err.Error(), "sealed with key-encryption key "+k.Fingerprint()+" and neither CAPABILITIES_KEK_FILE nor CAPABILITIES_KEK is set") {
		t.Errorf("no KEK for sealed secrets: %v", err)
	}
	if s, err := FromEnv(ctx, store.NewMem(), ""); s != nil || err != nil {
		t.Errorf("no KEK and nothing sealed: %v, %v; want the keychain (nil, nil)", s, err)
	}
	t.Setenv(EnvKEK, base64.StdEncoding.EncodeToString(k.key[:]))
	s, err := FromEnv(ctx, st, "hub1")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(s); err != nil || !cmp.Equal(got, testValues) {
		t.Errorf("through CAPABILITIES_KEK: %v, %v", got, err)
	}
	if !strings.Contains(s.String(), k.Fingerprint()+" from CAPABILITIES_KEK") {
		t.Errorf("String() = %q", s.String())
	}
	u := Unusable(errors.New("no key"))
	if _, err := u.Get(ctx, "a/b"); err == nil || err.Error() != "getting secret a/b: no key" {
		t.Errorf("Unusable.Get: %v", err)
	}
}

func TestKEKInput(t *testing.T) {
	dir := t.TempDir()
	raw := bytes.Repeat([]byte{0xAB}, 32)
	write := func(name string, data []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b64 := base64.StdEncoding.EncodeToString(raw)
	tests := []struct {
		name    string
		file    string // CAPABILITIES_KEK_FILE
		val     string // CAPABILITIES_KEK
		wantErr string // "" → the key is raw
		none    bool
	}{
		{name: "raw file", file: write("raw", raw, 0o600)},
		{name: "base64 file", file: write("b64", []byte(b64+"\n"), 0o600)},
		{name: "base64url unpadded file", file: write("b64url", []byte(base64.RawURLEncoding.EncodeToString(raw)), 0o400)},
		{name: "env", val: b64},
		{name: "neither", none: true},
		{name: "both", file: write("both", raw, 0o600), val: b64, wantErr: "both CAPABILITIES_KEK_FILE and CAPABILITIES_KEK are set; set one"},
		{name: "short file", file: write("short", []byte(base64.StdEncoding.EncodeToString(raw[:16])), 0o600), wantErr: "decodes to 16 bytes, want 32"},
		{name: "garbage file", file: write("garbage", []byte("not a key at all!"), 0o600), wantErr: "neither 32 raw bytes nor base64 of them"},
		{name: "empty file", file: write("empty", nil, 0o600), wantErr: "it is empty"},
		{name: "group-readable", file: write("open", raw, 0o640), wantErr: "has mode 0640: others can read it or change it; restrict it to its owner: chmod 600 " + filepath.Join(dir, "open")},
		{name: "missing file", file: filepath.Join(dir, "nope"), wantErr: "no such file or directory"},
		{name: "directory", file: dir, wantErr: "is not a regular file"},
		{name: "env not base64", val: "%%%", wantErr: "CAPABILITIES_KEK is not base64"},
		{name: "env short", val: base64.StdEncoding.EncodeToString(raw[:31]), wantErr: "CAPABILITIES_KEK decodes to 31 bytes, want 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{EnvKEKFile: tt.file, EnvKEK: tt.val}
			k, err := KEKFromEnv(func(s string) string { return env[s] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.none {
				if k != nil {
					t.Fatalf("a key with nothing set: %v", k.Source)
				}
				return
			}
			if !bytes.Equal(k.key[:], raw) {
				t.Errorf("key = %x", k.key)
			}
		})
	}
}

func TestWriteKEKFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "keys", "kek")
	k := mustKEK(t)
	if err := WriteKEKFile(p, k); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	back, err := ReadKEKFile(p)
	if err != nil || back.key != k.key {
		t.Fatalf("read back: %v", err)
	}
	if err := WriteKEKFile(p, mustKEK(t)); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("overwriting: %v", err)
	}
	if again, _ := ReadKEKFile(p); again.key != k.key {
		t.Error("the refused write changed the file")
	}
}

func TestSealedTampered(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem()
	k := mustKEK(t)
	s := mustOpen(t, st, "", k)
	fill(t, s)
	rec := func(ref string) valueRecord {
		var r valueRecord
		if err := st.Get(ctx, store.Blobs, valueID(ref), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	put := func(ref string, r any) {
		if err := st.Put(ctx, store.Blobs, valueID(ref), r); err != nil {
			t.Fatal(err)
		}
	}
	// A flipped bit of the ciphertext.
	r := rec("slack/work")
	r.Sealed[3] ^= 1
	put("slack/work", r)
	_, err := s.Get(ctx, "slack/work")
	if !errors.Is(err, ErrSealed) || !strings.Contains(err.Error(), "the sealed value of slack/work (blobs/"+valueID("slack/work")+") does not open: it was tampered with") {
		t.Errorf("tampered value: %v", err)
	}
	// A sealed value copied to another reference does not open there.
	gh := rec("github/default")
	gh.Ref = "notion/default"
	put("notion/default", gh)
	if _, err := s.Get(ctx, "notion/default"); !errors.Is(err, ErrSealed) || !strings.Contains(err.Error(), "notion/default") {
		t.Errorf("a value copied to another ref: %v", err)
	}
	// Nor under another ref with its own ref field left as it was.
	put("notion/default", rec("github/default"))
	if _, err := s.Get(ctx, "notion/default"); !errors.Is(err, ErrSealed) {
		t.Errorf("a record copied as is: %v", err)
	}
	if v, err := s.Get(ctx, "github/default"); err != nil || v != testValues["github/default"] {
		t.Errorf("the untouched value: %q, %v", v, err)
	}
	// A tampered data key.
	var kr keyRecord
	if err := st.Get(ctx, store.Blobs, keyRecordID, &kr); err != nil {
		t.Fatal(err)
	}
	kr.Keys[0].Wrapped[0] ^= 1
	if err := st.Put(ctx, store.Blobs, keyRecordID, kr); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSealed(ctx, st, "", k); !errors.Is(err, ErrSealed) || !strings.Contains(err.Error(), "data key 1 in blobs/secret-key does not open under key-encryption key "+k.Fingerprint()) {
		t.Errorf("tampered key record: %v", err)
	}
	// A corrupt record is a CorruptError, named.
	if err := st.Put(ctx, store.Blobs, keyRecordID, "not a record"); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSealed(ctx, st, "", k); !errors.Is(err, ErrSealed) || !strings.Contains(err.Error(), "secret-key") {
		t.Errorf("corrupt key record: %v", err)
	}
}

// failing is a store whose writes fail after n of them succeeded: a crash
// after n writes.
type failing struct {
	store.Store
	n int
}

var errCrash = errors.New("crashed")

func (f *failing) write() error {
	if f.n <= 0 {
		return errCrash
	}
	f.n--
	return nil
}

func (f *failing) Put(ctx context.Context, kind store.Kind, id string, v any) error {
	if err := f.write(); err != nil {
		return err
	}
	return f.Store.Put(ctx, kind, id, v)
}

func (f *failing) Update(ctx context.Context, kind store.Kind, id string, fn func([]byte) ([]byte, error)) error {
	return f.Store.Update(ctx, kind, id, func(old []byte) ([]byte, error) {
		b, err := fn(old)
		if err != nil {
			return nil, err
		}
		if err := f.write(); err != nil {
			return nil, err
		}
		return b, nil
	})
}

func (f *failing) Delete(ctx context.Context, kind store.Kind, id string) error {
	if err := f.write(); err != nil {
		return err
	}
	return f.Store.Delete(ctx, kind, id)
}

// TestRotateCrash stops a rotation after each of its writes in turn: at
// every point the old KEK or the new one opens every value, and running
// the rotation again finishes it.
func TestRotateCrash(t *testing.T) {
	ctx := context.Background()
	for _, dataKey := range []bool{false, true} {
		for name, mk := range sealedStores(t) {
			t.Run(fmt.Sprintf("%s/dataKey=%v", name, dataKey), func(t *testing.T) {
				finished := false
				for k := 0; !finished && k < 20; k++ {
					st, hub := mk()
					oldK, newK := mustKEK(t), mustKEK(t)
					fill(t, mustOpen(t, st, hub, oldK))
					rot, err := Rotate(ctx, &failing{Store: st, n: k}, hub, oldK, newK, dataKey)
					if err == nil {
						finished = true
						if dataKey && (rot.Resealed != len(testValues) || !cmp.Equal(rot.Dropped, []int{1}) || rot.DataKey != 2) {
							t.Errorf("after %d writes: %+v", k, rot)
						}
					} else if !errors.Is(err, errCrash) {
						t.Fatalf("after %d writes: %v", k, err)
					}
					okOld, okNew := opensAll(st, hub, oldK), opensAll(st, hub, newK)
					if !okOld && !okNew {
						t.Fatalf("after %d writes: neither KEK opens every value", k)
					}
					if finished && (okOld || !okNew) {
						t.Fatalf("a finished rotation: the old KEK opens everything: %v, the new: %v", okOld, okNew)
					}
					if finished {
						break
					}
					// Run it again, whole: it finishes.
					if _, err := Rotate(ctx, st, hub, oldK, newK, dataKey); err != nil {
						t.Fatalf("after %d writes, again: %v", k, err)
					}
					if opensAll(st, hub, oldK) || !opensAll(st, hub, newK) {
						t.Fatalf("after %d writes, again: not under the new KEK alone", k)
					}
					var kr keyRecord
					if err := st.Get(ctx, store.Blobs, keyRecordID, &kr); err != nil {
						t.Fatal(err)
					}
					if len(kr.Keys) != 1 {
						t.Errorf("after %d writes, again: %d data keys left, want 1", k, len(kr.Keys))
					}
				}
				if !finished {
					t.Fatal("the rotation never finished in 20 writes")
				}
			})
		}
	}
}

func opensAll(st store.Store, hub string, k *KEK) bool {
	s, err := OpenSealed(context.Background(), st, hub, k)
	if err != nil {
		return false
	}
	got, err := readAll(s)
	return err == nil && cmp.Equal(got, testValues)
}

func TestRotateErrors(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem()
	oldK, newK, stranger := mustKEK(t), mustKEK(t), mustKEK(t)
	if _, err := Rotate(ctx, st, "", oldK, newK, false); err == nil || !strings.Contains(err.Error(), "no sealed secrets yet") {
		t.Errorf("nothing sealed: %v", err)
	}
	fill(t, mustOpen(t, st, "", oldK))
	before := dump(t, st)
	if _, err := Rotate(ctx, st, "", stranger, newK, true); !errors.Is(err, ErrSealed) || !strings.Contains(err.Error(), "sealed with key-encryption key "+oldK.Fingerprint()) {
		t.Errorf("a wrong old KEK: %v", err)
	}
	if diff := cmp.Diff(before, dump(t, st)); diff != "" {
		t.Errorf("a refused rotation wrote (-before +after):\n%s", diff)
	}
	// A process still holding the old KEK after a rotation fails clearly on
	// a write, and reads what its cached data key opens.
	s := mustOpen(t, st, "", oldK)
	if _, err := Rotate(ctx, st, "", oldK, newK, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "github/default", "x"); !errors.Is(err, ErrSealed) || !strings.Contains(err.Error(), newK.Fingerprint()) {
		t.Errorf("Set with the old KEK after a rotation: %v", err)
	}
	if got, err := readAll(mustOpen(t, st, "", newK)); err != nil || !cmp.Equal(got, testValues) {
		t.Errorf("after the rotation: %v, %v", got, err)
	}
}

func dump(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	ids, err := st.List(context.Background(), store.Blobs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, id := range ids {
		var raw json.RawMessage
		if err := st.Get(context.Background(), store.Blobs, id, &raw); err != nil {
			t.Fatal(err)
		}
		out[id] = string(raw)
	}
	return out
}

// TestSealedDumpRevealsNothing stores secrets in a file store, rotates both
// keys, and reads every byte of every file of the hub directory: no value
// appears in any encoding the scrubber knows, nor does the KEK or a data
// key.
func TestSealedDumpRevealsNothing(t *testing.T) {
	ctx := context.Background()
	f, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	oldK, newK := mustKEK(t), mustKEK(t)
	s := mustOpen(t, f, f.Hub().ID, oldK)
	fill(t, s)
	if _, err := Rotate(ctx, f, f.Hub().ID, oldK, newK, true); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, f, f.Hub().ID, newK)
	if err := s.Set(ctx, "late/default", "late-Value_after+rotation"); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"late-Value_after+rotation", string(oldK.key[:]), string(newK.key[:])}
	for _, v := range testValues {
		secrets = append(secrets, v)
	}
	for _, dk := range s.keys {
		secrets = append(secrets, string(dk))
	}
	sc := scrub.New(secrets...)
	files := 0
	err = filepath.WalkDir(f.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if w := sc.Which(string(data)); len(w) > 0 {
			t.Errorf("%s holds a secret (%d of them)", p, len(w))
		}
		for _, v := range secrets {
			for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), hex.EncodeToString([]byte(v))} {
				if bytes.Contains(data, []byte(form)) {
					t.Errorf("%s holds a secret", p)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 4 {
		t.Errorf("read %d files: the sealed records are not in the hub directory", files)
	}
	if got, err := readAll(s); err != nil || !cmp.Equal(got, testValues) {
		t.Errorf("the values are lost: %v", err)
	}
}

// FuzzSealedRecord feeds the decoders and the opener any bytes: no panic,
// and nothing but the real record opens.
func FuzzSealedRecord(f *testing.F) {
	ctx := context.Background()
	st := store.NewMem()
	k, _ := NewKEK()
	s, _ := OpenSealed(ctx, st, "hub", k)
	if err := s.Set(ctx, "a/b", "the-value"); err != nil {
		f.Fatal(err)
	}
	var good json.RawMessage
	if err := st.Get(ctx, store.Blobs, valueID("a/b"), &good); err != nil {
		f.Fatal(err)
	}
	var key json.RawMessage
	if err := st.Get(ctx, store.Blobs, keyRecordID, &key); err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(good))
	f.Add([]byte(key))
	f.Add([]byte(`{"format":"capabilities.sh/sealed-secret/v1","ref":"a/b","key":1,"nonce":"AAAA","sealed":"AAAA"}`))
	f.Add([]byte(`{"format":"capabilities.sh/sealed-key/v1","kek":"x","current":1,"keys":[{"version":1}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, err := decodeKeyRecord(data); err == nil {
			if keys, err := unwrapAll(r, k, ""); err == nil && !bytes.Equal(bytes.TrimSpace(data), bytes.TrimSpace(key)) {
				// Only the real record's keys may unwrap (a re-encoding of it is fine).
				var real keyRecord
				_ = json.Unmarshal(key, &real)
				if !cmp.Equal(r.Keys, real.Keys) {
					t.Fatalf("a forged key record unwrapped %d keys", len(keys))
				}
			}
		}
		v, err := s.openValue(ctx, "a/b", data)
		if err == nil && (v != "the-value" || !bytes.Equal(bytes.TrimSpace(data), bytes.TrimSpace(good)) && !sameRecord(data, good)) {
			t.Fatalf("a forged record opened: %q", v)
		}
	})
}

// sameRecord reports whether a and b decode to the same value record (a
// re-encoding of the real one opens, and that is fine).
func sameRecord(a, b []byte) bool {
	ra, err1 := decodeValueRecord("x", a)
	rb, err2 := decodeValueRecord("x", b)
	return err1 == nil && err2 == nil && cmp.Equal(ra, rb)
}

// TestSealedConcurrentFirstSet: processes that each seal their first value
// at once (each its own Sealed over one file store) make one data key, and
// every value opens.
func TestSealedConcurrentFirstSet(t *testing.T) {
	ctx := context.Background()
	f, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	k := mustKEK(t)
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		s := mustOpen(t, f, f.Hub().ID, k)
		go func() { errs <- s.Set(ctx, fmt.Sprintf("ns%d/default", i), fmt.Sprintf("value-%d", i)) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	s := mustOpen(t, f, f.Hub().ID, k)
	for i := range n {
		if v, err := s.Get(ctx, fmt.Sprintf("ns%d/default", i)); err != nil || v != fmt.Sprintf("value-%d", i) {
			t.Errorf("ns%d: %q, %v", i, v, err)
		}
	}
	var kr keyRecord
	if err := f.Get(ctx, store.Blobs, keyRecordID, &kr); err != nil {
		t.Fatal(err)
	}
	if len(kr.Keys) != 1 || kr.Hub != f.Hub().ID {
		t.Errorf("key record: %d data keys, hub %q; want 1 key of hub %q", len(kr.Keys), kr.Hub, f.Hub().ID)
	}
}

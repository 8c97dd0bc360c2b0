package secret

// Sealed: credentials kept in the hub's own store (any store.Store: the
// file store, or a database), encrypted at rest, for a machine with no OS
// keychain (a server). Envelope encryption with Go's crypto/aes and
// crypto/cipher (AES-256-GCM), nothing hand-made beyond composing them:
//
//   - the key-encryption key (KEK): 32 random bytes that never enter the
//     store, read from CAPABILITIES_KEK_FILE (raw or base64, mode 600) or
//     CAPABILITIES_KEK (base64);
//   - the data key: 32 random bytes per hub, kept in the store wrapped
//     (sealed) under the KEK, in the record blobs/secret-key, beside the
//     KEK's fingerprint, so that a wrong KEK is named as such;
//   - each value: sealed under the data key, with a fresh nonce, in the
//     record blobs/secret-<hash of the reference>; the associated data binds
//     it to the hub, the reference and the data key's version, so a sealed
//     value copied to another reference (or hub) does not open.
//
// A dump of the store alone reveals no secret: it holds only ciphertext and
// a wrapped key that nothing in the store can unwrap.

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/store"
)

// The environment variables that select the sealed store.
const (
	EnvKEKFile = "CAPABILITIES_KEK_FILE"
	EnvKEK     = "CAPABILITIES_KEK"
)

// BackendSealed is the sealed store in the hub's own store.
const BackendSealed Backend = "sealed"

// KEKSize is the size of a key-encryption key and of a data key, in bytes.
const KEKSize = 32

const (
	keyRecordID   = "secret-key"
	valuePrefix   = "secret-v-"
	keyFormat     = "capabilities.sh/sealed-key/v1"
	valueFormat   = "capabilities.sh/sealed-secret/v1"
	kekHint       = "make one with `capabilities hub secrets generate-kek FILE` (32 random bytes, base64, mode 600)"
	fingerprintSz = 8
)

// ErrSealed: the hub's secrets are sealed and cannot be opened as things
// stand (no KEK, the wrong KEK, a damaged record).
var ErrSealed = errors.New("the hub's sealed secrets cannot be opened")

// keyRecord is blobs/secret-key: the hub's data keys, each wrapped under
// the KEK whose fingerprint it names.
type keyRecord struct {
	Format  string       `json:"format"`
	Hub     string       `json:"hub"`
	KEK     string       `json:"kek"`     // fingerprint of the KEK that wraps Keys
	Current int          `json:"current"` // the data key new values are sealed under
	Keys    []wrappedKey `json:"keys"`
	Updated time.Time    `json:"updatedAt"`
}

type wrappedKey struct {
	Version int    `json:"version"`
	Nonce   []byte `json:"nonce"`
	Wrapped []byte `json:"wrapped"`
}

// valueRecord is blobs/secret-v-<hash>: one sealed value.
type valueRecord struct {
	Format string `json:"format"`
	Ref    string `json:"ref"`
	Key    int    `json:"key"` // the data key's version
	Nonce  []byte `json:"nonce"`
	Sealed []byte `json:"sealed"`
}

func wrapAD(hub string, version int) []byte {
	return fmt.Appendf(nil, "%s\x00hub=%s\x00key=%d", keyFormat, hub, version)
}

func valueAD(hub, ref string, version int) []byte {
	return fmt.Appendf(nil, "%s\x00hub=%s\x00ref=%s\x00key=%d", valueFormat, hub, ref, version)
}

func valueID(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return valuePrefix + hex.EncodeToString(sum[:16])
}

func gcm(key []byte) cipher.AEAD {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // only for a key that is not 32 bytes: never
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		panic(err)
	}
	return a
}

func seal(key, plain, ad []byte) (nonce, sealed []byte, err error) {
	a := gcm(key)
	nonce = make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, nil, fmt.Errorf("making a nonce: %w", err)
	}
	return nonce, a.Seal(nil, nonce, plain, ad), nil
}

func open(key, nonce, sealed, ad []byte) ([]byte, error) {
	a := gcm(key)
	if len(nonce) != a.NonceSize() {
		return nil, fmt.Errorf("a nonce of %d bytes, want %d", len(nonce), a.NonceSize())
	}
	return a.Open(nil, nonce, sealed, ad)
}

// decodeKeyRecord decodes and checks the shape of a key record.
func decodeKeyRecord(data []byte) (*keyRecord, error) {
	var r keyRecord
	if err := store.DecodeRecord("blobs/"+keyRecordID, data, &r); err != nil {
		return nil, err
	}
	if r.Format != keyFormat {
		return nil, fmt.Errorf("blobs/%s: format %q, want %q (written by a newer capabilities?)", keyRecordID, r.Format, keyFormat)
	}
	if r.KEK == "" || len(r.Keys) == 0 {
		return nil, fmt.Errorf("blobs/%s: no key-encryption key fingerprint or no data key", keyRecordID)
	}
	found := false
	for _, k := range r.Keys {
		if k.Version == r.Current {
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("blobs/%s: the current data key %d is not among its keys", keyRecordID, r.Current)
	}
	return &r, nil
}

// decodeValueRecord decodes and checks the shape of a value record.
func decodeValueRecord(id string, data []byte) (*valueRecord, error) {
	var r valueRecord
	if err := store.DecodeRecord("blobs/"+id, data, &r); err != nil {
		return nil, err
	}
	if r.Format != valueFormat {
		return nil, fmt.Errorf("blobs/%s: format %q, want %q (written by a newer capabilities?)", id, r.Format, valueFormat)
	}
	if err := ValidateRef(r.Ref); err != nil {
		return nil, fmt.Errorf("blobs/%s: %w", id, err)
	}
	if len(r.Nonce) == 0 || len(r.Sealed) == 0 {
		return nil, fmt.Errorf("blobs/%s: no nonce or no sealed value", id)
	}
	return &r, nil
}

// unwrapAll opens every data key of r under kek.
func unwrapAll(r *keyRecord, kek *KEK, hub string) (map[int][]byte, error) {
	if fp := kek.Fingerprint(); r.KEK != fp {
		return nil, fmt.Errorf("%w: this hub's secrets were sealed with key-encryption key %s; %s holds %s: point it at the key they were sealed with (after `capabilities hub secrets rotate-key`, the new one)",
			ErrSealed, r.KEK, kek.Source, fp)
	}
	if hub != "" && r.Hub != hub {
		return nil, fmt.Errorf("%w: blobs/%s belongs to hub %s, and this is hub %s (copied from another hub?)", ErrSealed, keyRecordID, r.Hub, hub)
	}
	keys := map[int][]byte{}
	for _, w := range r.Keys {
		dk, err := open(kek.key[:], w.Nonce, w.Wrapped, wrapAD(r.Hub, w.Version))
		if err != nil || len(dk) != KEKSize {
			return nil, fmt.Errorf("%w: data key %d in blobs/%s does not open under key-encryption key %s: the record was tampered with or damaged", ErrSealed, w.Version, keyRecordID, r.KEK)
		}
		keys[w.Version] = dk
	}
	return keys, nil
}

// wrapAll wraps keys under kek into r (replacing r.Keys), in version order.
func wrapAll(r *keyRecord, keys map[int][]byte, kek *KEK) error {
	r.KEK = kek.Fingerprint()
	r.Keys = r.Keys[:0]
	versions := make([]int, 0, len(keys))
	for v := range keys {
		versions = append(versions, v)
	}
	slices.Sort(versions)
	for _, v := range versions {
		nonce, w, err := seal(kek.key[:], keys[v], wrapAD(r.Hub, v))
		if err != nil {
			return err
		}
		r.Keys = append(r.Keys, wrappedKey{Version: v, Nonce: nonce, Wrapped: w})
	}
	r.Updated = time.Now().UTC().Truncate(time.Second)
	return nil
}

func newDataKey() ([]byte, error) {
	dk := make([]byte, KEKSize)
	if _, err := rand.Read(dk); err != nil {
		return nil, fmt.Errorf("making a data key: %w", err)
	}
	return dk, nil
}

func newHubID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func marshalRecord(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding a sealed record: %w", err)
	}
	return append(b, '\n'), nil
}

// Sealed keeps secrets sealed in a store.Store. It is safe for concurrent
// use, and several processes may share the store: the data key is made
// once (under the key record's lock), and every write reads the key record
// afresh, so a process with a stale KEK fails clearly instead of sealing
// under a key that is gone.
type Sealed struct {
	st  store.Store
	hub string // the hub id the caller knows ("" for none)
	kek *KEK

	mu     sync.Mutex
	keys   map[int][]byte // data keys unwrapped so far, by version
	recHub string         // the hub id of the key record last read
}

var _ Store = (*Sealed)(nil)

// OpenSealed opens the sealed secrets of st under kek. hubID, when not
// empty, is the store's hub id: a key record of another hub is refused. A
// store with no key record yet gets one at the first Set. It checks the
// KEK against the key record now, so that a wrong key fails at once.
func OpenSealed(ctx context.Context, st store.Store, hubID string, kek *KEK) (*Sealed, error) {
	s := &Sealed{st: st, hub: hubID, kek: kek, keys: map[int][]byte{}}
	if _, err := s.load(ctx); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return s, nil
}

// IsSealed reports whether st holds sealed secrets (a key record), and the
// fingerprint of the KEK they are sealed with.
func IsSealed(ctx context.Context, st store.Store) (fp string, ok bool, err error) {
	var r keyRecord
	err = st.Get(ctx, store.Blobs, keyRecordID, &r)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading the sealed secrets' key: %w", err)
	}
	return r.KEK, true, nil
}

// FromEnv opens the sealed store when CAPABILITIES_KEK_FILE or
// CAPABILITIES_KEK is set. Neither set: nil and no error, unless st's
// secrets are sealed, which is an error that says what to set.
func FromEnv(ctx context.Context, st store.Store, hubID string) (*Sealed, error) {
	kek, err := KEKFromEnv(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSealed, err)
	}
	if kek == nil {
		fp, sealed, err := IsSealed(ctx, st)
		if err != nil || !sealed {
			return nil, err
		}
		return nil, fmt.Errorf("%w: they were sealed with key-encryption key %s and neither %s nor %s is set; set %s to the file of that key",
			ErrSealed, fp, EnvKEKFile, EnvKEK, EnvKEKFile)
	}
	return OpenSealed(ctx, st, hubID, kek)
}

// load reads the key record and unwraps its data keys into the cache. It
// returns the record; an error wrapping store.ErrNotFound when there is
// none.
func (s *Sealed) load(ctx context.Context) (*keyRecord, error) {
	var raw json.RawMessage
	if err := s.st.Get(ctx, store.Blobs, keyRecordID, &raw); err != nil {
		return nil, fmt.Errorf("reading the sealed secrets' key: %w", err)
	}
	r, err := decodeKeyRecord(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSealed, err)
	}
	keys, err := unwrapAll(r, s.kek, s.hub)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.keys, s.recHub = keys, r.Hub
	s.mu.Unlock()
	return r, nil
}

// current returns the hub id and the current data key, making the key
// record when there is none.
func (s *Sealed) current(ctx context.Context) (hub string, version int, dk []byte, err error) {
	r, err := s.load(ctx)
	if errors.Is(err, store.ErrNotFound) {
		err = s.st.Update(ctx, store.Blobs, keyRecordID, func(old []byte) ([]byte, error) {
			if old != nil {
				return old, nil // made meanwhile by another process
			}
			dk, err := newDataKey()
			if err != nil {
				return nil, err
			}
			hub := s.hub
			if hub == "" {
				hub = newHubID()
			}
			nr := &keyRecord{Format: keyFormat, Hub: hub, Current: 1}
			if err := wrapAll(nr, map[int][]byte{1: dk}, s.kek); err != nil {
				return nil, err
			}
			return marshalRecord(nr)
		})
		if err != nil {
			return "", 0, nil, fmt.Errorf("making the sealed secrets' data key: %w", err)
		}
		r, err = s.load(ctx)
	}
	if err != nil {
		return "", 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return r.Hub, r.Current, s.keys[r.Current], nil
}

// Get returns the value stored under ref.
func (s *Sealed) Get(ctx context.Context, ref string) (string, error) {
	if err := ValidateRef(ref); err != nil {
		return "", fmt.Errorf("getting secret: %w", err)
	}
	var raw json.RawMessage
	err := s.st.Get(ctx, store.Blobs, valueID(ref), &raw)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("getting secret %s: %w", ref, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("getting secret %s: %w", ref, err)
	}
	v, err := s.openValue(ctx, ref, raw)
	if err != nil {
		return "", fmt.Errorf("getting secret %s: %w", ref, err)
	}
	return v, nil
}

// openValue opens a value record read for ref.
func (s *Sealed) openValue(ctx context.Context, ref string, raw []byte) (string, error) {
	r, err := decodeValueRecord(valueID(ref), raw)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrSealed, err)
	}
	s.mu.Lock()
	dk, ok := s.keys[r.Key]
	hub := s.recHub
	s.mu.Unlock()
	if !ok { // a data key made since (a rotation), or nothing read yet
		if _, err := s.load(ctx); err != nil {
			return "", err
		}
		s.mu.Lock()
		dk, ok = s.keys[r.Key]
		hub = s.recHub
		s.mu.Unlock()
		if !ok {
			return "", fmt.Errorf("%w: %s is sealed under data key %d, which blobs/%s does not hold (damaged, or a rotation dropped it)", ErrSealed, ref, r.Key, keyRecordID)
		}
	}
	plain, err := open(dk, r.Nonce, r.Sealed, valueAD(hub, ref, r.Key))
	if err != nil {
		return "", fmt.Errorf("%w: the sealed value of %s (blobs/%s) does not open: it was tampered with, damaged, or copied from another reference or hub", ErrSealed, ref, valueID(ref))
	}
	return string(plain), nil
}

// Set seals value under ref, replacing any earlier value.
func (s *Sealed) Set(ctx context.Context, ref, value string) error {
	if err := ValidateRef(ref); err != nil {
		return fmt.Errorf("storing secret: %w", err)
	}
	if value == "" {
		return fmt.Errorf("storing secret %s: %w", ref, ErrEmpty)
	}
	hub, version, dk, err := s.current(ctx)
	if err != nil {
		return fmt.Errorf("storing secret %s: %w", ref, err)
	}
	nonce, sealed, err := seal(dk, []byte(value), valueAD(hub, ref, version))
	if err != nil {
		return fmt.Errorf("storing secret %s: %w", ref, err)
	}
	b, err := marshalRecord(valueRecord{Format: valueFormat, Ref: ref, Key: version, Nonce: nonce, Sealed: sealed})
	if err != nil {
		return fmt.Errorf("storing secret %s: %w", ref, err)
	}
	if err := s.st.Update(ctx, store.Blobs, valueID(ref), func([]byte) ([]byte, error) { return b, nil }); err != nil {
		return fmt.Errorf("storing secret %s: %w", ref, err)
	}
	return nil
}

// create seals value under ref unless ref holds a value already: got is
// the value ref holds after, created whether it is value. The reference
// is not checked (a hub key's starts with a dot: HubKeyRefPrefix).
func (s *Sealed) create(ctx context.Context, ref, value string) (got string, created bool, err error) {
	hub, version, dk, err := s.current(ctx)
	if err != nil {
		return "", false, err
	}
	nonce, sealed, err := seal(dk, []byte(value), valueAD(hub, ref, version))
	if err != nil {
		return "", false, err
	}
	b, err := marshalRecord(valueRecord{Format: valueFormat, Ref: ref, Key: version, Nonce: nonce, Sealed: sealed})
	if err != nil {
		return "", false, err
	}
	var old []byte
	err = s.st.Update(ctx, store.Blobs, valueID(ref), func(o []byte) ([]byte, error) {
		if o != nil {
			old = slices.Clone(o)
			return nil, errSkip // sealed meanwhile by another process: theirs stands
		}
		return b, nil
	})
	switch {
	case errors.Is(err, errSkip):
		got, err := s.openValue(ctx, ref, old)
		return got, false, err
	case err != nil:
		return "", false, err
	}
	return value, true, nil
}

// Delete removes ref; an error wrapping ErrNotFound says there was none.
func (s *Sealed) Delete(ctx context.Context, ref string) error {
	if err := ValidateRef(ref); err != nil {
		return fmt.Errorf("deleting secret: %w", err)
	}
	found := false
	err := s.st.Update(ctx, store.Blobs, valueID(ref), func(old []byte) ([]byte, error) {
		found = old != nil
		return nil, errSkip
	})
	if err != nil && !errors.Is(err, errSkip) {
		return fmt.Errorf("deleting secret %s: %w", ref, err)
	}
	if !found {
		return fmt.Errorf("deleting secret %s: %w", ref, ErrNotFound)
	}
	if err := s.st.Delete(ctx, store.Blobs, valueID(ref)); err != nil {
		return fmt.Errorf("deleting secret %s: %w", ref, err)
	}
	return nil
}

// errSkip ends an Update without writing.
var errSkip = errors.New("nothing to write")

// Refs lists the references of the stored secrets, sorted.
func (s *Sealed) Refs(ctx context.Context) ([]string, error) {
	recs, err := s.values(ctx)
	if err != nil {
		return nil, err
	}
	refs := make([]string, 0, len(recs))
	for _, r := range recs {
		refs = append(refs, r.Ref)
	}
	slices.Sort(refs)
	return refs, nil
}

// values reads every value record.
func (s *Sealed) values(ctx context.Context) (map[string]*valueRecord, error) {
	ids, err := s.st.List(ctx, store.Blobs)
	if err != nil {
		return nil, fmt.Errorf("listing the sealed secrets: %w", err)
	}
	out := map[string]*valueRecord{}
	for _, id := range ids {
		if !strings.HasPrefix(id, valuePrefix) {
			continue
		}
		var raw json.RawMessage
		if err := s.st.Get(ctx, store.Blobs, id, &raw); errors.Is(err, store.ErrNotFound) {
			continue // deleted meanwhile
		} else if err != nil {
			return nil, fmt.Errorf("reading the sealed secrets: %w", err)
		}
		r, err := decodeValueRecord(id, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSealed, err)
		}
		if valueID(r.Ref) != id {
			return nil, fmt.Errorf("%w: blobs/%s holds the secret of %s, whose record is blobs/%s (moved by hand?)", ErrSealed, id, r.Ref, valueID(r.Ref))
		}
		out[id] = r
	}
	return out, nil
}

// SealedStatus is what `hub secrets status` shows.
type SealedStatus struct {
	KEK        string   `json:"kek"`        // the fingerprint of the KEK in use
	KEKSource  string   `json:"kekSource"`  // where it was read
	Sealed     bool     `json:"sealed"`     // a key record exists
	SealedWith string   `json:"sealedWith"` // the fingerprint the key record names
	DataKey    int      `json:"dataKey"`    // the current data key's version
	DataKeys   []int    `json:"dataKeys"`   // every data key the record holds
	Secrets    []string `json:"secrets"`    // the references stored
	Unreadable []string `json:"unreadable"` // references whose value does not open, and why
	HubID      string   `json:"hubId"`      // the hub the key record belongs to
	Updated    string   `json:"updatedAt"`  // when the key record was last written
}

// Check opens every stored value (without returning any) and reports the
// state of the sealed store.
func (s *Sealed) Check(ctx context.Context) (*SealedStatus, error) {
	st := &SealedStatus{KEK: s.kek.Fingerprint(), KEKSource: s.kek.Source, DataKeys: []int{}, Secrets: []string{}, Unreadable: []string{}}
	r, err := s.load(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	st.Sealed, st.SealedWith, st.DataKey, st.HubID = true, r.KEK, r.Current, r.Hub
	st.Updated = r.Updated.Format(time.RFC3339)
	for _, k := range r.Keys {
		st.DataKeys = append(st.DataKeys, k.Version)
	}
	vals, err := s.values(ctx)
	if err != nil {
		return nil, err
	}
	for _, v := range vals {
		st.Secrets = append(st.Secrets, v.Ref)
		if _, err := s.Get(ctx, v.Ref); err != nil {
			st.Unreadable = append(st.Unreadable, err.Error())
		}
	}
	slices.Sort(st.Secrets)
	slices.Sort(st.Unreadable)
	return st, nil
}

// Status says where values are kept.
func (s *Sealed) Status() Status {
	return Status{Backend: BackendSealed, Reason: fmt.Sprintf("key-encryption key %s from %s", s.kek.Fingerprint(), s.kek.Source)}
}

// String is the one line of `doctor`.
func (s *Sealed) String() string {
	return fmt.Sprintf("sealed in the hub's store (AES-256-GCM; key-encryption key %s from %s)", s.kek.Fingerprint(), s.kek.Source)
}

// Rotation says what Rotate did.
type Rotation struct {
	From, To string // the KEK fingerprints
	DataKey  int    // the current data key's version after the rotation
	Resealed int    // values sealed again under a new data key
	Dropped  []int  // data keys dropped (no value uses them any more)
	Resumed  bool   // the key record was already under the new KEK (an interrupted rotation)
	// Rewrapped: the key record is under the new KEK (false: Rotate failed
	// before it changed anything).
	Rewrapped bool
}

// Rotate wraps the hub's data keys under newKEK, in one write of the key
// record: before it the old KEK opens everything, after it the new one
// does. With newDataKey it then makes a new data key (in the same write),
// seals every value again under it, one record at a time (each value opens
// at every point: its data key stays in the key record), and last drops
// the data keys no value uses. A rotation that stopped half-way is finished
// by running it again with the same new KEK: the key record already under
// it is taken as is (the old KEK is then not needed).
func Rotate(ctx context.Context, st store.Store, hubID string, oldKEK, newKEK *KEK, newDataKey bool) (*Rotation, error) {
	out := &Rotation{To: newKEK.Fingerprint()}
	if oldKEK != nil {
		out.From = oldKEK.Fingerprint()
	}
	err := st.Update(ctx, store.Blobs, keyRecordID, func(old []byte) ([]byte, error) {
		if old == nil {
			return nil, fmt.Errorf("this hub has no sealed secrets yet: nothing to rotate (store a credential with %s set first)", EnvKEKFile)
		}
		r, err := decodeKeyRecord(old)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSealed, err)
		}
		out.From = r.KEK
		kek := newKEK
		if r.KEK != newKEK.Fingerprint() {
			if oldKEK == nil {
				return nil, fmt.Errorf("%w: they are sealed with key-encryption key %s; set %s to it to rotate", ErrSealed, r.KEK, EnvKEKFile)
			}
			kek = oldKEK
		} else {
			out.Resumed = true
		}
		keys, err := unwrapAll(r, kek, hubID)
		if err != nil {
			return nil, err
		}
		if newDataKey {
			dk, err := newDataKeyFn()
			if err != nil {
				return nil, err
			}
			next := slices.Max(slices.Collect(mapKeys(keys))) + 1
			keys[next] = dk
			r.Current = next
		}
		out.DataKey = r.Current
		if err := wrapAll(r, keys, newKEK); err != nil {
			return nil, err
		}
		return marshalRecord(r)
	})
	if err != nil {
		return out, fmt.Errorf("rotating the key-encryption key: %w", err)
	}
	out.Rewrapped = true
	// Seal every value under the current data key; then drop the keys no
	// value uses. A resumed rotation, or a plain one that finds old keys
	// left by an interrupted one, finishes this part.
	s, err := OpenSealed(ctx, st, hubID, newKEK)
	if err != nil {
		return out, fmt.Errorf("rotating the data key: %w", err)
	}
	n, dropped, err := s.reseal(ctx)
	out.Resealed, out.Dropped = n, dropped
	if err != nil {
		return out, fmt.Errorf("rotating the data key: %w", err)
	}
	return out, nil
}

var newDataKeyFn = newDataKey

func mapKeys(m map[int][]byte) func(func(int) bool) {
	return func(yield func(int) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// reseal seals every value not under the current data key again under it,
// then drops the data keys no value uses.
func (s *Sealed) reseal(ctx context.Context) (n int, dropped []int, err error) {
	kr, err := s.load(ctx)
	if err != nil {
		return 0, nil, err
	}
	vals, err := s.values(ctx)
	if err != nil {
		return 0, nil, err
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range vals {
			if !yield(id) {
				return
			}
		}
	})
	for _, id := range ids {
		v := vals[id]
		if v.Key == kr.Current {
			continue
		}
		plain, err := s.Get(ctx, v.Ref)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return n, nil, err
		}
		if err := s.Set(ctx, v.Ref, plain); err != nil {
			return n, nil, err
		}
		n++
	}
	vals, err = s.values(ctx)
	if err != nil {
		return n, nil, err
	}
	used := map[int]bool{}
	for _, v := range vals {
		used[v.Key] = true
	}
	err = s.st.Update(ctx, store.Blobs, keyRecordID, func(old []byte) ([]byte, error) {
		if old == nil {
			return nil, fmt.Errorf("blobs/%s was removed meanwhile", keyRecordID)
		}
		r, err := decodeKeyRecord(old)
		if err != nil {
			return nil, err
		}
		keys, err := unwrapAll(r, s.kek, s.hub)
		if err != nil {
			return nil, err
		}
		dropped = nil
		for v := range keys {
			if v != r.Current && !used[v] {
				delete(keys, v)
				dropped = append(dropped, v)
			}
		}
		if len(dropped) == 0 {
			return nil, errSkip
		}
		slices.Sort(dropped)
		if err := wrapAll(r, keys, s.kek); err != nil {
			return nil, err
		}
		return marshalRecord(r)
	})
	if errors.Is(err, errSkip) {
		err = nil
	}
	if err != nil {
		return n, nil, fmt.Errorf("dropping the old data keys: %w", err)
	}
	return n, dropped, nil
}

// unusable is the secret store of a hub whose sealed secrets cannot be
// opened: every call fails with the reason.
type unusable struct{ err error }

// Unusable returns a Store whose every call fails with err (the hub's
// sealed secrets cannot be opened: no KEK, a wrong or unreadable one).
func Unusable(err error) Store { return unusable{err} }

func (u unusable) Get(ctx context.Context, ref string) (string, error) {
	return "", fmt.Errorf("getting secret %s: %w", ref, u.err)
}

func (u unusable) Set(ctx context.Context, ref, value string) error {
	return fmt.Errorf("storing secret %s: %w", ref, u.err)
}

func (u unusable) Delete(ctx context.Context, ref string) error {
	return fmt.Errorf("deleting secret %s: %w", ref, u.err)
}

func (u unusable) String() string { return "sealed, and cannot be opened: " + u.err.Error() }

// Err is why the store cannot be used.
func (u unusable) Err() error { return u.err }

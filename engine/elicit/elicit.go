// Package elicit is the approval channel through the MCP client's own form:
// when a call asks and the client declared form elicitation, the hub sends
// an input request and a state it signed for that exact pending call —
// bound to the run, the calls, a nonce and an expiry. An answer counts only
// with that state, and only once: a replayed or altered state is refused.
// The model never sees the state; the client echoes it with the person's
// answer.
package elicit

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// State is what the hub signs for a set of pending calls of one run.
type State struct {
	Run     string    `json:"run"`
	Calls   []string  `json:"calls"`
	Nonce   string    `json:"nonce"`
	Expires time.Time `json:"exp"`
}

// Signer signs and checks states with the hub's key: kept in the hub
// directory (LoadSigner) with the file store, in the database with a
// database store (LoadSignerFrom), so that a state signed by one process
// is accepted by every other one on the same database.
type Signer struct {
	key []byte
	now func() time.Time
}

// ErrBadState is wrapped by every refusal of a state.
var ErrBadState = errors.New("the approval state is not valid")

// LoadSigner reads (or creates, mode 600) the signing key at
// dir/elicit-key.
func LoadSigner(dir string) (*Signer, error) {
	p := filepath.Join(dir, "elicit-key")
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, fmt.Errorf("creating the approval key: %w", err)
		}
		enc := []byte(hex.EncodeToString(k))
		if err := store.WriteFileAtomic(p, enc); err != nil {
			return nil, fmt.Errorf("creating the approval key: %w", err)
		}
		// Another process may have won the race: read what is there.
		b, err = os.ReadFile(p)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the approval key: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("reading the approval key: %s is malformed; remove it and it is made again", p)
	}
	return &Signer{key: key, now: time.Now}, nil
}

// Keys is a store that keeps the hub's own keys for every process that
// opens it (store/postgres.Store): Key returns the key called name, making
// it (size random bytes) when there is none, the same bytes for every
// process.
type Keys interface {
	Key(ctx context.Context, name string, size int) (key []byte, created bool, err error)
}

// KeyName is the name of the signing key in a Keys store.
const KeyName = "elicit-key"

// LoadSignerFrom reads (or makes, once for every process) the signing key
// kept in keys.
func LoadSignerFrom(ctx context.Context, keys Keys) (*Signer, error) {
	key, _, err := keys.Key(ctx, KeyName, 32)
	if err != nil {
		return nil, fmt.Errorf("reading the approval key: %w", err)
	}
	return &Signer{key: key, now: time.Now}, nil
}

// NewSigner signs with key (for tests).
func NewSigner(key []byte, now func() time.Time) *Signer {
	if now == nil {
		now = time.Now
	}
	return &Signer{key: key, now: now}
}

// Sign issues a state for the run's pending calls, valid for ttl.
func (s *Signer) Sign(run string, calls []string, ttl time.Duration) string {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	st := State{Run: run, Calls: calls, Nonce: hex.EncodeToString(nonce), Expires: s.now().Add(ttl).UTC().Truncate(time.Second)}
	body, _ := json.Marshal(st)
	mac := hmac.New(sha256.New, s.key)
	mac.Write(body)
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// Verify checks the signature and the expiry of a state.
func (s *Signer) Verify(state string) (*State, error) {
	b64, sig64, ok := strings.Cut(state, ".")
	if !ok {
		return nil, fmt.Errorf("%w: malformed", ErrBadState)
	}
	body, err1 := base64.RawURLEncoding.DecodeString(b64)
	sig, err2 := base64.RawURLEncoding.DecodeString(sig64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%w: malformed", ErrBadState)
	}
	mac := hmac.New(sha256.New, s.key)
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), sig) {
		return nil, fmt.Errorf("%w: the signature does not match (altered, or not issued by this hub)", ErrBadState)
	}
	var st State
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("%w: malformed", ErrBadState)
	}
	if s.now().After(st.Expires) {
		return nil, fmt.Errorf("%w: it expired at %s", ErrBadState, st.Expires.Format(time.RFC3339))
	}
	return &st, nil
}

// Answer is a person's answer to one input request.
type Answer struct {
	// Action is the client's elicitation action: accept, decline or cancel.
	Action string
	// Choice is the chosen option when Action is accept.
	Choice string
}

// Record checks the state and records each answered call as a decision
// through the elicitation channel. A declined request is a deny; a
// cancelled one records nothing. The state's nonce is spent with the first
// decision, so the same state cannot decide again.
func Record(ctx context.Context, st store.Store, signer *Signer, state string, answers map[string]Answer) (decided int, err error) {
	s, err := signer.Verify(state)
	if err != nil {
		return 0, err
	}
	choices := map[string]model.Choice{}
	for _, call := range s.Calls {
		a, ok := answers[call]
		if !ok {
			continue
		}
		switch a.Action {
		case "accept":
			c, err := approval.ParseChoice(a.Choice)
			if err != nil {
				return decided, err
			}
			choices[call] = c
		case "decline":
			choices[call] = model.ChoiceDeny
		}
	}
	// A run or always decides the other asks of its tool too
	// (approval.Record): the person's own answer to one of them is recorded
	// first, and one that such a choice already decided is not recorded again.
	var cur *model.Run
	for _, covering := range []bool{false, true} {
		for _, call := range s.Calls {
			choice, ok := choices[call]
			if !ok || covering != (choice == model.ChoiceRun || choice == model.ChoiceAlways) {
				continue
			}
			if p := pendingOf(cur, call); p != nil && p.Decision != nil {
				continue
			}
			r, err := approval.Record(ctx, st, approval.Request{RunID: s.Run, CallID: call, Choice: choice, Channel: approval.ChannelElicitation, Nonce: s.Nonce + "/" + call})
			if err != nil {
				return decided, err
			}
			cur = r
			decided++
		}
	}
	for call := range answers {
		if !contains(s.Calls, call) {
			return decided, fmt.Errorf("%w: it does not cover call %q", ErrBadState, call)
		}
	}
	return decided, nil
}

// pendingOf is r's pending item id; nil when r is nil.
func pendingOf(r *model.Run, id string) *model.Pending {
	if r == nil {
		return nil
	}
	return r.PendingItem(id)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

package elicit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

func TestSignVerify(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s := NewSigner([]byte(strings.Repeat("k", 32)), clock)
	state := s.Sign("r1", []string{"c3"}, 10*time.Minute)
	got, err := s.Verify(state)
	if err != nil || got.Run != "r1" || len(got.Calls) != 1 || got.Calls[0] != "c3" || got.Nonce == "" {
		t.Fatalf("Verify = %+v, %v", got, err)
	}
	if state2 := s.Sign("r1", []string{"c3"}, 10*time.Minute); state2 == state {
		t.Error("two states for the same call are equal: no nonce")
	}
	body, sig, _ := strings.Cut(state, ".")
	for name, bad := range map[string]string{
		"altered body": strings.ToUpper(body[:4]) + body[4:] + "." + sig,
		"altered sig":  body + "." + sig[:len(sig)-2] + "AA",
		"no signature": body,
		"garbage":      "%%%.%%%",
		"empty":        "",
		"other key":    NewSigner([]byte(strings.Repeat("x", 32)), clock).Sign("r1", []string{"c3"}, time.Minute),
	} {
		if _, err := s.Verify(bad); !errors.Is(err, ErrBadState) {
			t.Errorf("%s: Verify = %v, want ErrBadState", name, err)
		}
	}
	later := NewSigner([]byte(strings.Repeat("k", 32)), func() time.Time { return now.Add(11 * time.Minute) })
	if _, err := later.Verify(state); !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired state: %v", err)
	}
}

func TestRecordOnceOnly(t *testing.T) {
	st := store.NewMem()
	ctx := context.Background()
	run := model.Run{ID: "r1", Status: model.RunAwaitingApproval, Pending: []model.Pending{
		{ID: "c3", Kind: model.PendingApproval, Address: "up.record", ExpiresAt: time.Now().Add(time.Hour)},
	}}
	if err := st.Put(ctx, store.Runs, "r1", run); err != nil {
		t.Fatal(err)
	}
	s := NewSigner([]byte(strings.Repeat("k", 32)), nil)
	state := s.Sign("r1", []string{"c3"}, time.Minute)
	n, err := Record(ctx, st, s, state, map[string]Answer{"c3": {Action: "accept", Choice: "once"}})
	if err != nil || n != 1 {
		t.Fatalf("Record = %d, %v", n, err)
	}
	got, _ := store.Get[model.Run](ctx, st, store.Runs, "r1")
	if d := got.Pending[0].Decision; d == nil || d.Choice != model.ChoiceOnce || d.Channel != "elicitation" {
		t.Fatalf("decision = %+v", d)
	}
	if _, err := Record(ctx, st, s, state, map[string]Answer{"c3": {Action: "accept", Choice: "always"}}); err == nil {
		t.Error("a replayed state decided again")
	}
	// An answer for a call the state does not cover is refused.
	other := s.Sign("r1", []string{"c9"}, time.Minute)
	if _, err := Record(ctx, st, s, other, map[string]Answer{"c3": {Action: "accept", Choice: "once"}}); !errors.Is(err, ErrBadState) {
		t.Errorf("answer outside the state: %v", err)
	}
	if _, err := Record(ctx, st, s, s.Sign("r1", []string{"c3"}, time.Minute), map[string]Answer{"c3": {Action: "accept", Choice: "sometimes"}}); err == nil {
		t.Error("an unknown choice was accepted")
	}
}

// TestRecordRunAfterOwnAnswers: answers to several calls of one tool made
// together: a run on one decides the others (approval.Record), but not one
// the person answered on its own, which is recorded first.
func TestRecordRunAfterOwnAnswers(t *testing.T) {
	st := store.NewMem()
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	run := model.Run{ID: "r1", Status: model.RunAwaitingApproval, Pending: []model.Pending{
		{ID: "c1", Kind: model.PendingApproval, Address: "up.record", Contract: "k", ExpiresAt: exp},
		{ID: "c2", Kind: model.PendingApproval, Address: "up.record", Contract: "k", ExpiresAt: exp},
		{ID: "c3", Kind: model.PendingApproval, Address: "up.record", Contract: "k", ExpiresAt: exp},
		{ID: "c4", Kind: model.PendingApproval, Address: "up.record", Contract: "k", ExpiresAt: exp},
	}}
	if err := st.Put(ctx, store.Runs, "r1", run); err != nil {
		t.Fatal(err)
	}
	s := NewSigner([]byte(strings.Repeat("k", 32)), nil)
	state := s.Sign("r1", []string{"c1", "c2", "c3", "c4"}, time.Minute)
	answers := map[string]Answer{
		"c1": {Action: "accept", Choice: "run"},
		"c2": {Action: "decline"},
		"c3": {Action: "accept", Choice: "run"},
	}
	if _, err := Record(ctx, st, s, state, answers); err != nil {
		t.Fatal(err)
	}
	got, _ := store.Get[model.Run](ctx, st, store.Runs, "r1")
	choices := map[string]model.Choice{}
	for _, p := range got.Pending {
		if p.Decision != nil {
			choices[p.ID] = p.Decision.Choice
		}
	}
	want := map[string]model.Choice{"c1": model.ChoiceRun, "c2": model.ChoiceDeny, "c3": model.ChoiceRun, "c4": model.ChoiceRun}
	if diff := cmp.Diff(want, choices); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

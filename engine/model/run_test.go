package model

import (
	"encoding/json"
	"testing"
)

// TestRunStatusFromBefore: run records written before the statuses took the
// envelope's words said "awaiting_input"; they read as the status the
// envelope gives the run, and every other status reads as written.
func TestRunStatusFromBefore(t *testing.T) {
	decided := `,"decision":{"choice":"once","channel":"auth","at":"2026-01-01T00:00:00Z"}`
	for _, tc := range []struct {
		name, record string
		want         RunStatus
	}{
		{"old, an approval", `{"id":"r1","status":"awaiting_input","pending":[{"id":"c1","kind":"approval"}]}`, RunAwaitingApproval},
		{"old, a connection", `{"id":"r1","status":"awaiting_input","pending":[{"id":"c1","kind":"approval"},{"id":"c2","kind":"connection"}]}`, RunAwaitingConnection},
		{"old, a connection since stored", `{"id":"r1","status":"awaiting_input","pending":[{"id":"c1","kind":"connection"` + decided + `}]}`, RunAwaitingApproval},
		{"awaiting_approval", `{"id":"r1","status":"awaiting_approval","pending":[{"id":"c1","kind":"approval"}]}`, RunAwaitingApproval},
		{"awaiting_connection", `{"id":"r1","status":"awaiting_connection","pending":[{"id":"c1","kind":"connection"}]}`, RunAwaitingConnection},
		{"completed", `{"id":"r1","status":"completed"}`, RunCompleted},
		{"running", `{"id":"r1","status":"running"}`, RunRunning},
	} {
		var r Run
		if err := json.Unmarshal([]byte(tc.record), &r); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r.Status != tc.want || r.ID != "r1" {
			t.Errorf("%s: read status %q (id %q), want %q", tc.name, r.Status, r.ID, tc.want)
		}
		if r.Status.Paused() != (tc.want == RunAwaitingApproval || tc.want == RunAwaitingConnection) {
			t.Errorf("%s: Paused() = %v", tc.name, r.Status.Paused())
		}
	}
	var r Run
	if err := json.Unmarshal([]byte(`{"id":"r1","status":7}`), &r); err == nil {
		t.Error("a status that is not a string was read without an error")
	}
}

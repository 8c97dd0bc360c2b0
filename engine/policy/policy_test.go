package policy

import (
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
)

func tool(addr string, readOnly bool, contract string) *model.Tool {
	ro := readOnly
	return &model.Tool{Address: addr, Contract: contract, Annotations: &model.Annotations{ReadOnlyHint: &ro}}
}

func TestDecide(t *testing.T) {
	write := tool("gh.createIssue", false, "c1")
	read := tool("gh.getIssue", true, "r1")
	reviewed := map[string]string{"gh.createIssue": "c1", "gh.getIssue": "r1"}
	rule := func(target, conn string, a Action) Rule { return Rule{Target: target, Connection: conn, Action: a} }
	pinned := func(target string, a Action, contract string) Rule {
		return Rule{Target: target, Action: a, Contract: contract}
	}
	tests := []struct {
		name     string
		rules    []Rule
		reviewed map[string]string
		tool     *model.Tool
		conn     string
		want     Action
		reason   string
	}{
		{"no rule, read-only runs", nil, reviewed, read, "", Allow, ReasonReadOnly},
		{"no rule, write asks", nil, reviewed, write, "", Ask, ReasonMayWrite},
		{"unannotated asks", nil, map[string]string{"gh.x": "x"}, &model.Tool{Address: "gh.x", Contract: "x"}, "", Ask, ReasonMayWrite},
		{"new tool asks even if read-only", nil, map[string]string{}, read, "", Ask, ReasonNew},
		{"new tool asks despite an allow", []Rule{rule("gh", "", Allow)}, map[string]string{}, write, "", Ask, ReasonNew},
		{"changed tool asks", []Rule{rule("gh.createIssue", "", Allow)}, map[string]string{"gh.createIssue": "old"}, write, "", Ask, ReasonChanged},
		{"changed tool still denied", []Rule{rule("gh", "", Deny)}, map[string]string{"gh.createIssue": "old"}, write, "", Deny, ReasonDenyRule},
		{"new tool still denied", []Rule{rule("gh.createIssue", "", Deny)}, map[string]string{}, write, "", Deny, ReasonDenyRule},
		{"source allow", []Rule{rule("gh", "", Allow)}, reviewed, write, "", Allow, ReasonRule},
		{"source ask over read-only", []Rule{rule("gh", "", Ask)}, reviewed, read, "", Ask, ReasonRule},
		{"tool beats source", []Rule{rule("gh", "", Ask), rule("gh.createIssue", "", Allow)}, reviewed, write, "", Allow, ReasonRule},
		{"source+conn beats source", []Rule{rule("gh", "", Ask), rule("gh", "work", Allow)}, reviewed, write, "work", Allow, ReasonRule},
		{"tool beats source+conn", []Rule{rule("gh", "work", Allow), rule("gh.createIssue", "", Ask)}, reviewed, write, "work", Ask, ReasonRule},
		{"tool+conn beats tool", []Rule{rule("gh.createIssue", "", Ask), rule("gh.createIssue", "work", Allow)}, reviewed, write, "work", Allow, ReasonRule},
		{"conn rule ignored for other conn", []Rule{rule("gh.createIssue", "work", Allow)}, reviewed, write, "personal", Ask, ReasonMayWrite},
		{"conn rule ignored for default conn", []Rule{rule("gh.createIssue", "work", Allow)}, reviewed, write, "", Ask, ReasonMayWrite},
		// A narrower rule never loosens a deny.
		{"source deny beats tool allow", []Rule{rule("gh", "", Deny), rule("gh.createIssue", "", Allow)}, reviewed, write, "", Deny, ReasonDenyRule},
		{"source deny beats tool+conn allow", []Rule{rule("gh", "", Deny), rule("gh.createIssue", "work", Allow)}, reviewed, write, "work", Deny, ReasonDenyRule},
		{"source+conn deny beats tool allow", []Rule{rule("gh", "work", Deny), rule("gh.createIssue", "", Allow)}, reviewed, write, "work", Deny, ReasonDenyRule},
		{"source+conn deny other conn", []Rule{rule("gh", "work", Deny), rule("gh.createIssue", "", Allow)}, reviewed, write, "personal", Allow, ReasonRule},
		{"tool deny beats source allow", []Rule{rule("gh", "", Allow), rule("gh.createIssue", "", Deny)}, reviewed, write, "", Deny, ReasonDenyRule},
		{"tool deny on read-only", []Rule{rule("gh.getIssue", "", Deny)}, reviewed, read, "", Deny, ReasonDenyRule},
		{"tool+conn deny beats source+conn allow", []Rule{rule("gh", "work", Allow), rule("gh.createIssue", "work", Deny)}, reviewed, write, "work", Deny, ReasonDenyRule},
		{"deny for another tool does not apply", []Rule{rule("gh.deleteRepo", "", Deny)}, reviewed, write, "", Ask, ReasonMayWrite},
		{"deny for another namespace does not apply", []Rule{rule("ghx", "", Deny)}, reviewed, read, "", Allow, ReasonReadOnly},
		// Pinned rules.
		{"pinned allow applies", []Rule{pinned("gh.createIssue", Allow, "c1")}, reviewed, write, "", Allow, ReasonRule},
		{"stale pinned allow stops applying", []Rule{pinned("gh.createIssue", Allow, "c0")}, reviewed, write, "", Ask, ReasonStaleRule},
		{"stale pinned allow falls to source rule", []Rule{pinned("gh.createIssue", Allow, "c0"), rule("gh", "", Ask)}, reviewed, write, "", Ask, ReasonRule},
		{"pinned deny applies even when stale", []Rule{pinned("gh.createIssue", Deny, "c0")}, reviewed, write, "", Deny, ReasonDenyRule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Policy{Rules: tt.rules, Reviewed: tt.reviewed}
			v := p.Decide(tt.tool, tt.conn)
			if v.Action != tt.want || v.Reason != tt.reason {
				t.Errorf("Decide = %s (%s: %s), want %s (%s)", v.Action, v.Reason, v.Message, tt.want, tt.reason)
			}
			if v.Message == "" {
				t.Error("verdict has no message")
			}
		})
	}
}

func TestSetRemoveValidate(t *testing.T) {
	var p Policy
	p.Set(Rule{Target: "gh", Action: Allow})
	p.Set(Rule{Target: "gh", Action: Deny})
	p.Set(Rule{Target: "gh", Connection: "work", Action: Ask})
	if len(p.Rules) != 2 || p.Rules[0].Action != Deny {
		t.Fatalf("rules after Set = %+v", p.Rules)
	}
	if !p.Remove("gh", "work") || p.Remove("gh", "work") {
		t.Error("Remove did not report correctly")
	}
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
	bad := Policy{Rules: []Rule{{Target: "gh", Action: "maybe"}}}
	if err := bad.Validate(); err == nil {
		t.Error("Validate accepted action maybe")
	}
	bad = Policy{Rules: []Rule{{Target: "Bad Target", Action: Allow}}}
	if err := bad.Validate(); err == nil {
		t.Error("Validate accepted a bad target")
	}
	if _, err := ParseAction("perhaps"); err == nil {
		t.Error("ParseAction accepted perhaps")
	}
}

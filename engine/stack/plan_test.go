package stack

import (
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/google/go-cmp/cmp"
)

func src(ns, cmd string, conns ...Connection) SourceFile {
	return SourceFile{Source: Source{Namespace: ns, Kind: model.KindStdio, Command: cmd}, Connections: conns}
}

func rule(target string, a policy.Action) Rule { return Rule{Target: target, Action: a} }

// state builds a State from items: SourceFile, Rule, hub.Profile, Skill.
func state(items ...any) *State {
	s := NewState()
	for _, it := range items {
		switch x := it.(type) {
		case SourceFile:
			s.Sources[x.Source.Namespace] = x
		case Rule:
			s.Rules[x.Key()] = x
		case hub.Profile:
			s.Profiles[x.Name] = x
		case Skill:
			s.Skills[x.Name] = x
		}
	}
	return s
}

// shown is a change as the test compares it.
type shown struct {
	Key      string
	Op       string
	Conflict bool
	Loosens  bool
}

func TestPlan(t *testing.T) {
	gh := src("github", "gh-mcp", Connection{Name: "default", Secret: "GITHUB_TOKEN", Env: "GITHUB_TOKEN"})
	gh2 := src("github", "gh-mcp-v2", Connection{Name: "default", Secret: "GITHUB_TOKEN", Env: "GITHUB_TOKEN"})
	gh3 := src("github", "gh-mcp-v3")
	mem := src("memory", "mem")
	docs := hub.Profile{Name: "docs", Mode: hub.ModeCode, Namespaces: []string{"memory"}}
	docsDirect := hub.Profile{Name: "docs", Mode: hub.ModeDirect, Namespaces: []string{"memory"}}
	docsReordered := hub.Profile{Name: "docs", Mode: hub.ModeCode, Namespaces: []string{"memory", "memory"}}
	sk := Skill{Name: "pdf", Files: map[string][]byte{"SKILL.md": []byte("a")}}
	sk2 := Skill{Name: "pdf", Files: map[string][]byte{"SKILL.md": []byte("b")}}
	for _, tc := range []struct {
		name               string
		base, mine, theirs *State
		want               []shown
	}{
		{name: "nothing anywhere", base: state(), mine: state(), theirs: state()},
		{name: "first pull adds everything", base: nil, mine: state(), theirs: state(gh, rule("github", policy.Deny), docs, sk),
			want: []shown{{"source github", OpAdd, false, false}, {"skill pdf", OpAdd, false, false}, {"rule github", OpAdd, false, false}, {"profile docs", OpAdd, false, false}}},
		{name: "first pull: the same item on both sides is no change", base: nil, mine: state(gh), theirs: state(gh)},
		{name: "first pull: a different item on both sides is a conflict", base: nil, mine: state(gh), theirs: state(gh2),
			want: []shown{{"source github", OpChange, true, false}}},
		{name: "a local change stays for the next push", base: state(gh), mine: state(gh2), theirs: state(gh)},
		{name: "a local addition stays", base: state(), mine: state(mem), theirs: state()},
		{name: "a local removal stays", base: state(mem), mine: state(), theirs: state(mem)},
		{name: "theirs changed", base: state(gh), mine: state(gh), theirs: state(gh2),
			want: []shown{{"source github", OpChange, false, false}}},
		{name: "theirs removed", base: state(gh, mem), mine: state(gh, mem), theirs: state(gh),
			want: []shown{{"source memory", OpRemove, false, false}}},
		{name: "both changed the same way", base: state(gh), mine: state(gh2), theirs: state(gh2)},
		{name: "both changed differently", base: state(gh), mine: state(gh2), theirs: state(gh3),
			want: []shown{{"source github", OpChange, true, false}}},
		{name: "theirs removed what mine changed", base: state(gh), mine: state(gh2), theirs: state(),
			want: []shown{{"source github", OpRemove, true, false}}},
		{name: "mine removed what theirs changed", base: state(gh), mine: state(), theirs: state(gh2),
			want: []shown{{"source github", OpAdd, true, false}}},
		{name: "connections in another order are the same", base: state(), mine: state(src("x", "c", Connection{Name: "a", Secret: "A"}, Connection{Name: "b", Secret: "B"})),
			theirs: state(src("x", "c", Connection{Name: "b", Secret: "B"}, Connection{Name: "a", Secret: "A"}))},
		{name: "a profile's lists in another order are the same", base: state(), mine: state(docs), theirs: state(docsReordered)},
		{name: "profile conflict", base: state(docs), mine: state(docsDirect), theirs: state(hub.Profile{Name: "docs", Mode: hub.ModeCode}),
			want: []shown{{"profile docs", OpChange, true, false}}},
		{name: "skill changed", base: state(sk), mine: state(sk), theirs: state(sk2),
			want: []shown{{"skill pdf", OpChange, false, false}}},
		{name: "a new deny tightens", base: state(), mine: state(), theirs: state(rule("github", policy.Deny)),
			want: []shown{{"rule github", OpAdd, false, false}}},
		{name: "a new allow loosens", base: state(), mine: state(), theirs: state(rule("github.read", policy.Allow)),
			want: []shown{{"rule github.read", OpAdd, false, true}}},
		{name: "a deny removed loosens", base: state(rule("github", policy.Deny)), mine: state(rule("github", policy.Deny)), theirs: state(),
			want: []shown{{"rule github", OpRemove, false, true}}},
		{name: "a deny made ask loosens", base: state(rule("github", policy.Deny)), mine: state(rule("github", policy.Deny)), theirs: state(rule("github", policy.Ask)),
			want: []shown{{"rule github", OpChange, false, true}}},
		{name: "an ask made allow loosens", base: state(rule("github", policy.Ask)), mine: state(rule("github", policy.Ask)), theirs: state(rule("github", policy.Allow)),
			want: []shown{{"rule github", OpChange, false, true}}},
		{name: "an ask made deny tightens", base: state(rule("github", policy.Ask)), mine: state(rule("github", policy.Ask)), theirs: state(rule("github", policy.Deny)),
			want: []shown{{"rule github", OpChange, false, false}}},
		{name: "an allow removed tightens", base: state(rule("github", policy.Allow)), mine: state(rule("github", policy.Allow)), theirs: state(),
			want: []shown{{"rule github", OpRemove, false, false}}},
		{name: "a local deny against their allow is a loosening conflict", base: state(rule("github", policy.Ask)), mine: state(rule("github", policy.Deny)), theirs: state(rule("github", policy.Allow)),
			want: []shown{{"rule github", OpChange, true, true}}},
		{name: "rules differ by connection", base: state(), mine: state(Rule{Target: "github", Connection: "work", Action: policy.Deny}), theirs: state(rule("github", policy.Deny)),
			want: []shown{{"rule github", OpAdd, false, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []shown
			for _, c := range Plan(tc.base, tc.mine, tc.theirs) {
				got = append(got, shown{c.Key(), c.Op, c.Conflict, c.Loosens})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanCarriesSides: a change holds each side's item, for showing it.
func TestPlanCarriesSides(t *testing.T) {
	base := state(rule("github", policy.Ask))
	mine := state(rule("github", policy.Deny))
	theirs := state(rule("github", policy.Allow))
	got := Plan(base, mine, theirs)
	want := []Change{{Kind: KindRule, Name: "github", Op: OpChange, Conflict: true, Loosens: true,
		Base: rule("github", policy.Ask), Mine: rule("github", policy.Deny), Theirs: rule("github", policy.Allow)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Plan (-want +got):\n%s", diff)
	}
}

package typegen

import (
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// BenchmarkDescribeNamespace100 describes a namespace of 100 real tools (the
// first 100 of linear, each with an output type) within the default budget.
func BenchmarkDescribeNamespace100(b *testing.B) {
	var tools []model.Tool
	for _, t := range testenv.CorpusTools(b) {
		if strings.HasPrefix(t.Address, "linear.") && len(tools) < 100 {
			tools = append(tools, t)
		}
	}
	d := NewDescriber(tools)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := d.Describe([]string{"linear"}, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDescribeTool describes one tool with $defs (notion.apiPostPage).
func BenchmarkDescribeTool(b *testing.B) {
	d := NewDescriber(testenv.CorpusTools(b))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := d.Describe([]string{"notion.apiPostPage"}, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewDescriber converts every schema of the corpus (501 tools).
func BenchmarkNewDescriber(b *testing.B) {
	tools := testenv.CorpusTools(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		NewDescriber(tools)
	}
}

// BenchmarkDescribeNamespace100Cold includes converting the 100 tools'
// schemas, which happens once, on the namespace's first describe.
func BenchmarkDescribeNamespace100Cold(b *testing.B) {
	var tools []model.Tool
	for _, t := range testenv.CorpusTools(b) {
		if strings.HasPrefix(t.Address, "linear.") && len(tools) < 100 {
			tools = append(tools, t)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := NewDescriber(tools).Describe([]string{"linear"}, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

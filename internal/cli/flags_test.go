package cli

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// placeholder is what a back-quoted word in a flag's usage must look like:
// pflag prints it as the flag's argument (`--secret-env NAME`), so it has
// to be a name for a value, not prose.
var placeholder = regexp.MustCompile(`^[A-Z][A-Z0-9_]*(=[A-Z][A-Z0-9_]*)?$`)

// TestFlagUsagesNameTheirValue walks every command's flags: a back-quoted
// word in a usage string is what help prints after the flag, so it must be
// a placeholder such as NAME or RUN_ID (never `hub auth`), and every flag
// that takes a value names it (help never says "string" or "int").
func TestFlagUsagesNameTheirValue(t *testing.T) {
	root := newRoot(&env{stdout: io.Discard, stderr: io.Discard})
	root.InitDefaultCompletionCmd()
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		c.Flags().VisitAll(func(f *pflag.Flag) {
			n++
			where := c.CommandPath() + " --" + f.Name
			if q := strings.Count(f.Usage, "`"); q != 0 && q != 2 {
				t.Errorf("%s: usage %q has %d backticks; pflag reads the first pair as the argument's name", where, f.Usage, q)
			}
			name, _ := pflag.UnquoteUsage(f)
			if f.Value.Type() == "bool" {
				if name != "" {
					t.Errorf("%s: a boolean flag takes no argument, but its usage names one: %q", where, name)
				}
				return
			}
			if !placeholder.MatchString(name) {
				t.Errorf("%s: help would print %q as its argument; name the value with a back-quoted placeholder such as `NAME` (usage %q)", where, "--"+f.Name+" "+name, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if n < 40 {
		t.Fatalf("walked only %d flags; the command tree was not built", n)
	}
}

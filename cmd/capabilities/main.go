// Command capabilities is the hub's command line. It is a thin main: the
// commands live in internal/cli, the engine in engine/.
package main

import (
	"os"

	"github.com/capabilities-sh/capabilities/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

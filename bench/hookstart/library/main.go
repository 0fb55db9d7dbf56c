// Command library reads [hook] blocked of the configuration file it is given
// with BurntSushi/toml, into a struct of that one key, and links nothing else
// of contextd: what the library alone costs a process start, in
// BenchmarkHookStart (package hookstartbench).
package main

import (
	"fmt"
	"os"

	"github.com/BurntSushi/toml"
)

func main() {
	var cfg struct {
		Hook struct{ Blocked *[]string }
	}
	if _, err := toml.DecodeFile(os.Args[1], &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "library:", err)
		os.Exit(1)
	}
	if cfg.Hook.Blocked == nil {
		fmt.Println("unset")
		return
	}
	fmt.Println(*cfg.Hook.Blocked)
}

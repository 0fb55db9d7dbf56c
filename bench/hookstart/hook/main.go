// Command hook reads [hook] blocked of the configuration file it is given as
// `contextd-proxy hook` does (hook.BlockList) and exits: the hook's whole
// reading path, in BenchmarkHookStart (package hookstartbench).
package main

import (
	"fmt"
	"os"

	"github.com/contextd/contextd/proxy/hook"
)

func main() {
	list, from, err := hook.BlockList(hook.Options{ConfigFiles: os.Args[1:]})
	if err != nil || from == "" {
		fmt.Fprintln(os.Stderr, "hook: [hook] blocked not read:", err)
		os.Exit(1)
	}
	fmt.Println(list)
}

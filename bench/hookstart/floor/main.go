// Command floor reads the file it is given and prints its size: what any Go
// process that reads a configuration file pays, the baseline of
// BenchmarkHookStart (package hookstartbench).
package main

import (
	"fmt"
	"os"
)

func main() {
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	fmt.Println(len(b))
}

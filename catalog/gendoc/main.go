// Command gendoc writes the error catalog as Markdown to the file named by its argument.
package main

import (
	"fmt"
	"os"

	"github.com/contextd/contextd/catalog"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendoc OUTPUT.md")
		os.Exit(64)
	}
	if err := os.WriteFile(os.Args[1], []byte(catalog.Markdown()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(74)
	}
}

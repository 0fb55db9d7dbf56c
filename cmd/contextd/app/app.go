// Package app is the contextd command: `serve` (the daemon) and the admin
// subcommands. Run is the one place where errors become exit statuses.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/contextd/contextd/catalog"
)

// Version is set at build time (-ldflags -X).
var Version = "dev"

// Run executes the command line args (without argv[0]) and returns the exit status.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := Command()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		// A command's own verdict (replay found differences) is not an error
		// of contextd's.
		var ee *exitError
		if errors.As(err, &ee) {
			fmt.Fprintln(stderr, ee.msg)
			return ee.code
		}
		fmt.Fprintln(stderr, catalog.Format(err))
		return catalog.ExitCode(err)
	}
	return 0
}

// Command returns the command tree (also used to generate man pages and shell
// completions).
func Command() *cobra.Command {
	root := &cobra.Command{
		Use:   "contextd",
		Short: "Sandboxed tools, secret scrubbing and context memory for AI coding agents",
		Long: `contextd is a per-user daemon that AI coding agents call instead of their built-in
shell and file tools. systemd starts it on demand through contextd.socket; agents reach it
through contextd-proxy symlinks (contextd-proxy install).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%v (see %s --help): %w", err, c.CommandPath(), catalog.ErrUsage)
	})
	root.AddCommand(serveCommand(), installUnitsCommand(), statusCommand(), doctorCommand(), errorsCommand(), auditCommand(), inspectCommand(), mcpCommand(), cacheCommand(), sandboxCommand(), toolCommand(), apiCommand(), automationsCommand())
	return root
}

func errorsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "errors",
		Short: "Print the error catalog (codes, exit statuses, what to do)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprint(c.OutOrStdout(), catalog.Markdown())
			return nil
		},
	}
}

func oneArg(what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("usage: %s %s: %w", c.CommandPath(), what, catalog.ErrUsage)
		}
		return nil
	}
}

func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments: %w", c.CommandPath(), catalog.ErrUsage)
	}
	return nil
}

func homeDir() (string, error) {
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory (HOME unset): %w", catalog.ErrConfig)
	}
	return h, nil
}

package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/configcheck"
	"github.com/contextd/contextd/daemon/sandbox"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/daemon/scope"
	"github.com/contextd/contextd/daemon/toolfetch"
	"github.com/contextd/contextd/toolstore"
)

func toolCommand() *cobra.Command {
	var cfgPath string
	c := &cobra.Command{
		Use:   "tool",
		Short: "Install, update, list and remove plugin tools",
		Long: `Plugin tools are a team's own tools, run in contextd's sandbox like the built-in ones.
` + "`install SOURCE`" + ` fetches one (git::URL?ref=TAG, an https:// archive, a local directory or
archive) in a sandbox whose only way out is the source's host, checks what came out, prints
the permissions its contextd-tool.toml asks for and needs --yes or a "y" at the terminal,
builds it once in a sandbox, and pins it in the lock ($XDG_DATA_HOME/contextd/tools).`,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown tool subcommand %q (install, update, list, remove): %w", args[0], catalog.ErrUsage)
			}
			return c.Help()
		},
	}
	c.PersistentFlags().StringVar(&cfgPath, "config", "", "configuration file (default $XDG_CONFIG_HOME/contextd/config.toml)")
	c.AddCommand(toolInstallCommand(&cfgPath), toolUpdateCommand(&cfgPath), toolListCommand(), toolRemoveCommand())
	return c
}

// toolFlags are install's and update's shared flags.
type toolFlags struct {
	yes      bool
	checksum string
}

func (f *toolFlags) add(c *cobra.Command) {
	c.Flags().BoolVar(&f.yes, "yes", false, "approve the permissions without asking")
	c.Flags().StringVar(&f.checksum, "checksum", "", "the resolved value the source must give (sha256:HEX, git:COMMIT or tree:HEX, as `tool list` shows it)")
}

func toolInstallCommand(cfgPath *string) *cobra.Command {
	var f toolFlags
	var name string
	c := &cobra.Command{
		Use:   "install SOURCE",
		Short: "Fetch, check, approve, build and install a plugin tool",
		Long: `SOURCE is git::URL[//SUBDIR][?ref=REF] (https, http or file URLs), an http(s) URL of a
tar, tar.gz or zip archive, or a local directory or archive (a path, or file:///PATH),
each optionally with ?checksum=sha256:HEX (or git:COMMIT) that the fetch must resolve to.`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			in, done, err := newInstaller(c.Context(), *cfgPath, f.yes, c.InOrStdin(), c.OutOrStdout(), c.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			cwd, _ := os.Getwd()
			out, err := in.Install(c.Context(), toolfetch.Request{Source: args[0], Name: name, Checksum: f.checksum, Cwd: cwd})
			if err != nil {
				return err
			}
			printOutcome(c.OutOrStdout(), "installed", out)
			return nil
		},
	}
	f.add(c)
	c.Flags().StringVar(&name, "name", "", "install under this name instead of the manifest's")
	return c
}

func toolUpdateCommand(cfgPath *string) *cobra.Command {
	var f toolFlags
	c := &cobra.Command{
		Use:   "update NAME",
		Short: "Fetch a plugin tool's locked source again and install what changed",
		Long: `A source pinned to a git ref or an archive URL must resolve to what the lock holds:
a moved tag or other bytes are refused (CTXD-E093) unless --checksum gives the new value.
Permissions that widen what was approved are asked for again.`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			in, done, err := newInstaller(c.Context(), *cfgPath, f.yes, c.InOrStdin(), c.OutOrStdout(), c.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			out, err := in.Update(c.Context(), args[0], f.checksum)
			if err != nil {
				return err
			}
			printOutcome(c.OutOrStdout(), "updated", out)
			return nil
		},
	}
	f.add(c)
	return c
}

func toolListCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the installed plugin tools with their pins and permissions",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := toolstore.Default()
			if err != nil {
				return err
			}
			tools, err := toolfetch.List(s)
			if err != nil {
				return err
			}
			w := c.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(tools)
			}
			if len(tools) == 0 {
				fmt.Fprintln(w, "no plugin tools installed (contextd tool install SOURCE)")
				return nil
			}
			tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tSOURCE\tRESOLVED\tCHECKSUM\tINSTALLED")
			for _, t := range tools {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, orDash(t.Version), t.Source, t.Resolved, t.Checksum, t.Installed.Format("2006-01-02 15:04:05Z"))
			}
			tw.Flush()
			for _, t := range tools {
				fmt.Fprintf(w, "\n%s may:\n", t.Name)
				if t.Problem != "" {
					fmt.Fprintf(w, "  (its approved manifest cannot be read: %s)\n", t.Problem)
				}
				for _, p := range t.Permissions {
					fmt.Fprintf(w, "  - %s\n", p)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the tools as JSON")
	return c
}

func toolRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove an installed plugin tool and its lock entry",
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := toolstore.Default()
			if err != nil {
				return err
			}
			in := &toolfetch.Installer{Store: s}
			t, err := in.Remove(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "removed %s (%s)\n", t.Name, t.Checksum)
			return nil
		},
	}
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s takes %d argument(s), got %d (see --help): %w", c.CommandPath(), n, len(args), catalog.ErrUsage)
		}
		return nil
	}
}

// newInstaller sets up what an install runs in: the configuration, the
// store, the real sandbox (with a scope when the user manager answers)
// and the egress proxy. done releases them.
func newInstaller(ctx context.Context, cfgPath string, yes bool, stdin io.Reader, stdout, stderr io.Writer) (*toolfetch.Installer, func(), error) {
	cfg, err := configcheck.Load(cfgPath)
	if err != nil {
		return nil, nil, err
	}
	s, err := toolstore.Default()
	if err != nil {
		return nil, nil, err
	}
	home, err := homeDir()
	if err != nil {
		return nil, nil, err
	}
	r := &sandbox.Runner{}
	done := func() {}
	if m, err := scope.Connect(ctx); err != nil {
		r.ScopeNote = err.Error()
	} else {
		r.Scopes = m
		done = func() { m.Close() }
	}
	in := &toolfetch.Installer{Store: s, Config: cfg, Runner: r, Home: home,
		Approve: approver(yes, stdin, stdout),
		Log:     func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }}
	in.Net, in.NetErr = sandboxenv.NewNet(cfg, nil)
	return in, done, nil
}

// approver prints the permissions and decides: --yes approves, a terminal
// on stdin is asked, anything else is refused.
func approver(yes bool, stdin io.Reader, out io.Writer) func(string, []string, bool) error {
	return func(name string, perms []string, widened bool) error {
		if widened {
			fmt.Fprintf(out, "The update of %s asks for more than you approved; it may now:\n", name)
		} else {
			fmt.Fprintf(out, "Tool %s may:\n", name)
		}
		for _, p := range perms {
			fmt.Fprintf(out, "  - %s\n", p)
		}
		if yes {
			return nil
		}
		if !isTerminal(stdin) {
			return fmt.Errorf("tool %s: stdin is not a terminal and --yes was not given: %w", name, catalog.ErrApproval)
		}
		fmt.Fprint(out, "Install it? [y/N] ")
		line, _ := bufio.NewReader(stdin).ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return nil
		}
		return fmt.Errorf("tool %s: not approved: %w", name, catalog.ErrApproval)
	}
}

func printOutcome(w io.Writer, verb string, out *toolfetch.Outcome) {
	t := out.Tool
	if out.Unchanged {
		fmt.Fprintf(w, "%s is up to date (%s, %s)\n", t.Name, t.Resolved, t.Checksum)
		return
	}
	fmt.Fprintf(w, "%s %s %s from %s\n  resolved %s\n  checksum %s\n", verb, t.Name, orDash(t.Version), t.Source, t.Resolved, t.Checksum)
}

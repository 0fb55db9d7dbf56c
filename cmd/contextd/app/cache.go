package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/cachelayer"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/configcheck"
	"github.com/contextd/contextd/workspace"
)

func cacheCommand() *cobra.Command {
	var cfgPath string
	c := &cobra.Command{
		Use:   "cache",
		Short: "Show and clear the layers that keep sandboxed writes to toolchain caches",
		Long: `The sandbox shows the toolchain caches under your home (Go's module and build caches,
npm's, pip's, cargo's, Maven's and Gradle's) read-only, as the lower layer of an overlay:
a sandboxed command never writes to them. What it writes there goes to an upper layer
that contextd keeps per workspace under [cache] path ($XDG_CACHE_HOME/contextd/layers by
default), so that the workspace's next call is warm too. ` + "`list`" + ` shows those layers and
` + "`clear`" + ` deletes them; both work on the files, with or without the daemon running.`,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown cache subcommand %q (list, clear): %w", args[0], catalog.ErrUsage)
			}
			return c.Help()
		},
	}
	c.PersistentFlags().StringVar(&cfgPath, "config", "", "configuration file (default $XDG_CONFIG_HOME/contextd/config.toml)")
	c.AddCommand(cacheListCommand(&cfgPath), cacheClearCommand(&cfgPath))
	return c
}

// cacheManager opens the layers where the configuration puts them.
func cacheManager(cfgPath string) (*cachelayer.Manager, *config.Config, error) {
	cfg, err := configcheck.Load(cfgPath)
	if err != nil {
		return nil, nil, err
	}
	m, err := cachelayer.New(&cachelayer.Options{
		Root:     cfg.Cache.Path,
		MaxBytes: int64(cfg.Cache.MaxSize),
		MaxAge:   cfg.Cache.MaxAge.Duration,
	})
	return m, cfg, err
}

// cacheReport is what `contextd cache list --json` prints.
type cacheReport struct {
	Root       string             `json:"root"`
	MaxBytes   int64              `json:"max_bytes"`
	MaxAgeSec  int64              `json:"max_age_sec"`
	Workspaces []cachelayer.Usage `json:"workspaces"`
}

func cacheListCommand(cfgPath *string) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List each workspace's cache layers with their size and when they were last used",
		Long: `List each workspace that has cache layers, one line per cache: its size on disk and
when a call last used it, then the total. A workspace a call is using now is marked
"in use"; one whose directory no longer exists is marked "deleted" (its layers go when
they expire, or with ` + "`contextd cache clear`" + `).`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			m, _, err := cacheManager(*cfgPath)
			if err != nil {
				return err
			}
			us, err := m.List()
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(c.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(cacheReport{Root: m.Root(), MaxBytes: m.MaxBytes(), MaxAgeSec: int64(m.MaxAge() / time.Second), Workspaces: orEmpty(us)})
			}
			return printCacheList(c.OutOrStdout(), m, us)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the layers as JSON")
	return c
}

func orEmpty(us []cachelayer.Usage) []cachelayer.Usage {
	if us == nil {
		return []cachelayer.Usage{}
	}
	return us
}

func printCacheList(w io.Writer, m *cachelayer.Manager, us []cachelayer.Usage) error {
	if len(us) == 0 {
		_, err := fmt.Fprintf(w, "no cache layers in %s\n", m.Root())
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tCACHE\tSIZE\tLAST USED")
	var total int64
	for _, u := range us {
		name, note := u.Workspace, ""
		if name == "" {
			name = "(unknown: layers " + u.ID + ")"
		} else if _, err := os.Stat(name); errors.Is(err, os.ErrNotExist) {
			note = "deleted"
		}
		if u.InUse {
			note = "in use"
		}
		if note != "" {
			note = "  " + note
		}
		if len(u.Caches) == 0 {
			fmt.Fprintf(tw, "%s\t-\t0 B\t-%s\n", name, note)
		}
		for i, ch := range u.Caches {
			size := human(ch.Bytes)
			if ch.Partial {
				size = ">= " + size
			}
			if i > 0 {
				name, note = "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\n", name, ch.Name, size, ch.LastUsed.Local().Format("2006-01-02 15:04"), note)
		}
		total += u.Bytes
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "total %s in %d workspace(s), in %s; each kept to %s, removed after %s unused\n",
		human(total), len(us), m.Root(), human(m.MaxBytes()), days(m.MaxAge()))
	return err
}

// days writes a whole number of days as such ("14 days"), other durations
// as Go does.
func days(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d%day == 0:
		return fmt.Sprintf("%d days", d/day)
	}
	return d.String()
}

func cacheClearCommand(cfgPath *string) *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "clear [WORKSPACE | --all]",
		Short: "Delete a workspace's cache layers, or every workspace's",
		Long: `Delete the cache layers of WORKSPACE (a workspace root as ` + "`contextd cache list`" + ` shows it,
or any directory inside one), or of every workspace with --all. The next call in the
workspace starts again from your own caches alone. Layers a running call has mounted are
never deleted under it: clear leaves them, deletes the rest, and fails with CTXD-E056
(exit 75); run it again once the call is over.`,
		Args: func(c *cobra.Command, args []string) error {
			if all == (len(args) == 1) || len(args) > 1 {
				return fmt.Errorf("usage: %s WORKSPACE, or %s --all: %w", c.CommandPath(), c.CommandPath(), catalog.ErrUsage)
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			m, cfg, err := cacheManager(*cfgPath)
			if err != nil {
				return err
			}
			out := c.OutOrStdout()
			var removed []string
			if all {
				removed, err = m.Clear("")
			} else {
				removed, err = clearWorkspace(m, args[0], cfg.WorkspaceMarkers)
			}
			for _, ws := range removed {
				fmt.Fprintf(out, "cleared %s\n", ws)
			}
			if err == nil && len(removed) == 0 {
				fmt.Fprintf(out, "no cache layers in %s\n", m.Root())
			}
			return err
		},
	}
	c.Flags().BoolVar(&all, "all", false, "clear every workspace's layers")
	return c
}

// clearWorkspace clears the layers of the workspace dir names: dir as
// written (made absolute), then through its symlinks, then the workspace
// root holding it, as the daemon finds one; the first that has layers.
func clearWorkspace(m *cachelayer.Manager, dir string, markers []string) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", dir, err, catalog.ErrUsage)
	}
	candidates := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		candidates = append(candidates, real)
	}
	if pl, err := workspace.Find(abs, markers); err == nil {
		candidates = append(candidates, pl.Root)
	}
	var first error
	for _, ws := range candidates {
		removed, err := m.Clear(ws)
		if !errors.Is(err, catalog.ErrNotFound) {
			return removed, err
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

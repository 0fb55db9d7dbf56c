package app

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/configcheck"
	"github.com/contextd/contextd/daemon/homemount"
	"github.com/contextd/contextd/daemon/homeview"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/daemon/tools"
	"github.com/contextd/contextd/workspace"
)

func sandboxCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Show what a sandboxed call sees",
	}
	cmd.AddCommand(sandboxShowCommand())
	return cmd
}

// sandboxReport is `contextd sandbox show --json`.
type sandboxReport struct {
	Workspace string              `json:"workspace"`
	Presets   []string            `json:"presets"`
	CacheMode homemount.CacheMode `json:"cache_mode"`
	CacheNote string              `json:"cache_note,omitempty"`
	Mounts    []homemount.Entry   `json:"mounts"`
	Skipped   []string            `json:"skipped,omitempty"`
	// ConfigOnly are the presets whose configuration alone is shown: a
	// program of theirs is on PATH, no marker selects them.
	ConfigOnly []string `json:"config_only,omitempty"`
	// Denied are the deny-listed paths that exist on this machine: never
	// shown, whatever is configured.
	Denied []string `json:"denied"`
	// Network is what the egress proxy allows (nil: no proxy, NetworkErr
	// says why).
	Network    *netview.Description `json:"network,omitempty"`
	NetworkErr string               `json:"network_error,omitempty"`
}

func sandboxShowCommand() *cobra.Command {
	var cfgPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [DIR]",
		Short: "Print what a safe_bash call in DIR's workspace would see: every mount, the presets, the cache mode",
		Long: `Print what a safe_bash call made from DIR (default: the current directory) would see:
every mount with its mode and source (the system read-only, the workspace read-write, the
workspace's protected paths, the scratch home, what the home view shows, the scrubbed
copies, the cache overlays, the masked paths), the presets in force, the cache mode
(overlay, or private where overlayfs is not available), and the paths of the credential
deny-list that exist on this machine. It changes nothing.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := configcheck.Load(cfgPath)
			if err != nil {
				return err
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return fmt.Errorf("%s: %v: %w", dir, err, catalog.ErrUsage)
			}
			place, err := workspace.Find(abs, cfg.WorkspaceMarkers)
			if err != nil {
				return err
			}
			home, err := homeDir()
			if err != nil {
				return err
			}
			setup, err := homemount.NewSetup(cfg)
			if err != nil {
				return err
			}
			callerEnv := map[string]string{}
			for _, kv := range os.Environ() {
				if k, v, ok := strings.Cut(kv, "="); ok {
					callerEnv[k] = v
				}
			}
			rep, err := sandboxShow(cfg, setup, place.Root, home, callerEnv)
			if err != nil {
				return err
			}
			out := c.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			fmt.Fprintf(out, "workspace   %s\npresets     %s", rep.Workspace, strings.Join(rep.Presets, ", "))
			if len(rep.ConfigOnly) > 0 {
				fmt.Fprintf(out, "; configuration only (on PATH): %s", strings.Join(rep.ConfigOnly, ", "))
			}
			fmt.Fprintf(out, "\ncache mode  %s", rep.CacheMode)
			if rep.CacheNote != "" {
				fmt.Fprintf(out, " (%s)", rep.CacheNote)
			}
			fmt.Fprintln(out, "\n\nmounts:")
			tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
			for _, e := range rep.Mounts {
				src := ""
				if e.Source != "" {
					src = "<- " + e.Source
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", e.Mode, e.Path, src, e.From)
			}
			tw.Flush()
			if len(rep.Skipped) > 0 {
				fmt.Fprintln(out, "\nnot shown:")
				for _, s := range rep.Skipped {
					fmt.Fprintf(out, "  %s\n", s)
				}
			}
			fmt.Fprintln(out, "\ncredential deny-list, present here and never shown:")
			for _, d := range rep.Denied {
				fmt.Fprintf(out, "  %s\n", d)
			}
			printNetwork(out, rep.Network, rep.NetworkErr)
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "configuration file (default $XDG_CONFIG_HOME/contextd/config.toml)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// sandboxShow builds the report of what a safe_bash call in the workspace
// root would see, from the same decisions the daemon makes per call.
func sandboxShow(cfg *config.Config, setup *homemount.Setup, root, home string, callerEnv map[string]string) (*sandboxReport, error) {
	view, entries, err := setup.Describe(homemount.Call{Home: home, Workspace: root, Sandbox: "safe_bash", CallerEnv: callerEnv,
		Options: homeview.Options{PresetsOff: cfg.Home.PresetsOff, ReadOnly: cfg.Home.ReadOnly}})
	if err != nil {
		return nil, err
	}
	rep := &sandboxReport{Workspace: root, Presets: view.Presets, ConfigOnly: view.ConfigOnly, CacheMode: setup.Mode,
		CacheNote: setup.ModeNote, Skipped: view.Skipped, Denied: []string{}}
	for _, p := range setup.SystemDirs {
		if _, err := os.Lstat(p); err == nil {
			rep.Mounts = append(rep.Mounts, homemount.Entry{Mode: "ro", Path: p, From: "system"})
		}
	}
	rep.Mounts = append(rep.Mounts, homemount.Entry{Mode: "rw", Path: root, From: "the workspace"})
	for _, p := range tools.Protected(root) {
		rep.Mounts = append(rep.Mounts, homemount.Entry{Mode: "ro", Path: p, From: "protected: the host runs what it holds"})
	}
	// The agents' and editors' configuration, and the deny-list in the
	// workspace, as a call would get them (nothing is created here).
	ro, rw, masks, holders, warns, err := tools.DescribeShield(root, home, callerEnv)
	if err != nil {
		return nil, err
	}
	for _, p := range rw {
		rep.Mounts = append(rep.Mounts, homemount.Entry{Mode: "rw", Path: p, From: "bound onto itself: cannot be renamed away with the protected files in it"})
	}
	for _, p := range ro {
		from := "protected: the host runs what it holds"
		if slices.Contains(holders, p) {
			from = "missing: an empty read-only placeholder while a call runs, so that nothing can be created there"
		}
		rep.Mounts = append(rep.Mounts, homemount.Entry{Mode: "ro", Path: p, From: from})
	}
	for _, p := range masks {
		rep.Mounts = append(rep.Mounts, homemount.Entry{Mode: "masked", Path: p, From: "credential deny-list, in the workspace"})
	}
	rep.Skipped = append(rep.Skipped, warns...)
	for _, p := range cfg.Tools.SafeBash.ReadOnly {
		rep.Mounts = append(rep.Mounts, homemount.Entry{Mode: "ro", Path: p, From: "tools.safe_bash.read_only"})
	}
	for _, p := range cfg.Tools.SafeBash.ReadWrite {
		rep.Mounts = append(rep.Mounts, homemount.Entry{Mode: "rw", Path: p, From: "tools.safe_bash.read_write"})
	}
	rep.Mounts = append(rep.Mounts, entries...)
	rep.Mounts = append(rep.Mounts,
		homemount.Entry{Mode: "tmpfs", Path: "/tmp", From: "fresh, per call"},
		homemount.Entry{Mode: "proc", Path: "/proc", From: "the call's own pid namespace"},
		homemount.Entry{Mode: "dev", Path: "/dev", From: "null zero full random urandom tty pts shm"})
	if dirs, err := netview.DefaultDirs(); err != nil {
		rep.NetworkErr = err.Error()
	} else if h, err := netview.HostOf(); err != nil {
		rep.NetworkErr = err.Error()
	} else if ns, err := netview.NewSetup(cfg, h, dirs, nil); err != nil {
		rep.NetworkErr = err.Error()
	} else {
		d := ns.Describe()
		rep.Network = &d
	}
	for _, d := range homeview.DenyList(&homeview.Host{Home: home, Env: callerEnv}) {
		if _, err := os.Lstat(d.Path); err == nil {
			rep.Denied = append(rep.Denied, d.Path)
		}
	}
	return rep, nil
}

// printNetwork prints what a call may reach through the egress proxy.
func printNetwork(out io.Writer, d *netview.Description, why string) {
	if d == nil {
		fmt.Fprintf(out, "\nnetwork: none beyond the sandbox's loopback (no egress proxy: %s)\n", why)
		return
	}
	fmt.Fprintf(out, "\nnetwork: only through the egress proxy at %s; no resolver, no route\n", d.Proxy)
	fmt.Fprintln(out, "  allowed:")
	if len(d.Rules) == 0 {
		fmt.Fprintln(out, "    nothing")
	}
	for _, r := range d.Rules {
		fmt.Fprintf(out, "    %s\n", r)
	}
	if len(d.Credentials) > 0 {
		fmt.Fprintln(out, "  credentials put back on the wire, only for:")
		for _, c := range d.Credentials {
			fmt.Fprintf(out, "    %s\n", c)
		}
	}
	for _, f := range d.Forwards {
		fmt.Fprintf(out, "  forwarded to the host: %s\n", f)
	}
	for _, n := range d.Notes {
		fmt.Fprintf(out, "  note: %s\n", n)
	}
}

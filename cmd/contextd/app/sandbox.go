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
	"github.com/contextd/contextd/daemon/configcheck"
	"github.com/contextd/contextd/daemon/homemount"
	"github.com/contextd/contextd/daemon/homeview"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/envallow"
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
	// View is the spec's view exactly as a safe_bash call gets it
	// (sandboxenv.Builder.Plan; the debug log records each call's), and
	// Environment the names of the variables its command gets.
	View        runner.View `json:"view"`
	Environment []string    `json:"environment"`
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
			// What the proxy would send from here (it keeps back what
			// looks like a credential): XDG_* and PATH move the view.
			callerEnv := map[string]string{}
			for _, kv := range os.Environ() {
				if k, v, ok := strings.Cut(kv, "="); ok && !envallow.LooksLikeCredential(k, v) {
					callerEnv[k] = v
				}
			}
			rep, err := sandboxShow(sandboxenv.New(cfg, nil), place.Root, callerEnv)
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
// root would see: the plan of the same builder every call's sandbox comes
// from (nothing is created, leased or served).
func sandboxShow(b *sandboxenv.Builder, root string, callerEnv map[string]string) (*sandboxReport, error) {
	plan, err := b.Plan(sandboxenv.Request{Kind: sandboxenv.Shell, Name: "safe_bash", Workspace: root, CallerEnv: callerEnv})
	if err != nil {
		return nil, err
	}
	spec := &plan.Spec
	rep := &sandboxReport{Workspace: root, Denied: []string{}, Skipped: plan.Warnings, View: spec.View()}
	if v := plan.HomeView(); v != nil {
		rep.Presets, rep.ConfigOnly = v.Presets, v.ConfigOnly
		rep.Skipped = append(rep.Skipped, v.Skipped...)
	}
	var system []string
	if b.Home != nil {
		rep.CacheMode, rep.CacheNote, system = b.Home.Mode, b.Home.ModeNote, b.Home.SystemDirs
	}
	for _, kv := range plan.Vars {
		k, _, _ := strings.Cut(kv, "=")
		rep.Environment = append(rep.Environment, k)
	}
	slices.Sort(rep.Environment)
	// In the order the sandbox mounts them (ns.Spec): a later mount wins.
	add := func(mode, path, source string) {
		rep.Mounts = append(rep.Mounts, homemount.Entry{Mode: mode, Path: path, Source: source, From: plan.Why[path]})
	}
	for _, p := range system {
		if _, err := os.Lstat(p); err == nil {
			rep.Mounts = append(rep.Mounts, homemount.Entry{Mode: "ro", Path: p, From: "system"})
		}
	}
	rep.Mounts = append(rep.Mounts, homemount.Entry{Mode: "rw", Path: root, From: "the workspace"})
	if spec.HomeDir != "" {
		add("rw", spec.Home, spec.HomeDir)
	} else {
		rep.Mounts = append(rep.Mounts, homemount.Entry{Mode: "tmpfs", Path: spec.Home, From: "an empty home"})
	}
	for _, p := range spec.ReadOnly {
		add("ro", p, "")
	}
	for _, p := range spec.ReadWrite {
		add("rw", p, "")
	}
	for _, p := range spec.Pins {
		rep.Mounts = append(rep.Mounts, homemount.Entry{Mode: "pin", Path: p, From: "git's: bound onto itself, cannot be renamed or replaced"})
	}
	for _, bd := range spec.Binds {
		add("copy", bd.Target, bd.Source)
	}
	for _, o := range spec.Overlays {
		add("overlay", o.Lower, o.Upper)
	}
	for _, p := range spec.Masks {
		add("masked", p, "")
	}
	rep.Mounts = append(rep.Mounts,
		homemount.Entry{Mode: "tmpfs", Path: "/tmp", From: "fresh, per call"},
		homemount.Entry{Mode: "proc", Path: "/proc", From: "the call's own pid namespace"},
		homemount.Entry{Mode: "dev", Path: "/dev", From: "null zero full random urandom tty pts shm"})
	switch {
	case plan.Network != nil:
		rep.Network = plan.Network
	case b.NetErr != nil:
		rep.NetworkErr = b.NetErr.Error()
	}
	for _, d := range homeview.DenyList(&homeview.Host{Home: b.HomeDir, Env: callerEnv}) {
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

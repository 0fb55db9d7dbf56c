package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/configcheck"
	"github.com/contextd/contextd/daemon/homemount"
	"github.com/contextd/contextd/daemon/sandbox"
	"github.com/contextd/contextd/daemon/sandboxenv"
)

func doctorCommand() *cobra.Command {
	var cfgPath string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check each sandbox layer on this machine and say how to fix what is missing",
		Long: `Check each layer a tool call runs under by using it: user namespaces, openat2, the
seccomp profiles (with any overrides), the systemd user manager and its cgroup controllers,
and finally a complete sandbox running ` + "`true`" + `. A required layer that fails means every
call is refused (exit 70); a missing user manager only removes the per-call limits.
It also says how memory search ranks: lexical only, or lexical + dense through the
configured embedding endpoint, which it then probes with one short text.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			failed := 0
			cfg, cfgErr := configcheck.Load(cfgPath)
			checks := append(sandbox.Diagnose(c.Context()), cacheModeCheck(cfg, cfgErr), egressCheck(c.Context(), cfg, cfgErr), memorySearchCheck(c.Context(), cfg, cfgErr))
			checks = append(checks, toolChecks(cfg, cfgErr)...)
			for _, ch := range checks {
				if !ch.OK && ch.Required {
					failed++
				}
				fmt.Fprintf(c.OutOrStdout(), "%s  %-50s %s\n", checkMark(ch.OK, ch.Required), ch.Layer, ch.Detail)
				if !ch.OK {
					fmt.Fprintf(c.OutOrStdout(), "      fix: %s\n", ch.Fix)
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d required layer(s) failed: %w", failed, catalog.ErrSandbox)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "configuration file (default $XDG_CONFIG_HOME/contextd/config.toml)")
	return cmd
}

// toolChecks check each installed plugin tool as its instance's start
// would: not required (the other tools run without it), and each failure
// says what to do.
func toolChecks(cfg *config.Config, cfgErr error) []sandbox.Check {
	if cfgErr != nil {
		return nil
	}
	hs, note := pluginTools(cfg)
	if note != "" {
		return []sandbox.Check{{Layer: "plugin tools", Detail: note, Fix: "check $XDG_DATA_HOME/contextd/tools/tools.lock, or remove the tools and install them again"}}
	}
	checks := []sandbox.Check{}
	for _, h := range hs {
		ch := sandbox.Check{Layer: "plugin tool " + h.Name, OK: h.OK, Detail: h.Checksum + " from " + h.Source}
		if !h.OK {
			ch.Detail = h.Problem
			ch.Fix = "`contextd tool update " + h.Name + "` (or `contextd tool remove " + h.Name + "` and install it again)"
		}
		checks = append(checks, ch)
	}
	return checks
}

// cacheModeCheck says how safe_bash shows the user's toolchain caches:
// through an overlay (warm runs reuse them, writes stay in contextd's upper
// layer) or not at all (private caches per workspace, cold at first).
func cacheModeCheck(cfg *config.Config, cfgErr error) sandbox.Check {
	ch := sandbox.Check{Layer: "toolchain caches (overlayfs in a user namespace)"}
	if cfgErr != nil {
		ch.Detail, ch.Fix = cfgErr.Error(), "fix the configuration first"
		return ch
	}
	s, err := sandboxenv.NewHome(cfg, nil)
	if err != nil {
		ch.Detail, ch.Fix = err.Error(), "set HOME, or cache.path in the configuration"
		return ch
	}
	if s.Mode == homemount.Overlay {
		ch.OK, ch.Detail = true, "mode overlay: your caches read-only below, writes in "+s.Layers.Root()
		return ch
	}
	ch.Detail = "mode private: " + s.ModeNote
	ch.Fix = "put cache.path on ext4, xfs or btrfs (user xattrs), and use Linux 5.11 or later; until then each workspace fills its own caches"
	return ch
}

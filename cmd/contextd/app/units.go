package app

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/systemd"
)

func installUnitsCommand() *cobra.Command {
	var (
		dir, binary string
		enable      bool
	)
	c := &cobra.Command{
		Use:   "install-units",
		Short: "Install the systemd user units for a from-source install",
		Long: `Write contextd.socket, contextd-http.socket (the HTTP API's) and contextd.service into
~/.config/systemd/user (or --dir), with ExecStart pointing at this binary (or --binary). Files
are replaced only when they are contextd's own units; with --enable it also runs systemctl
--user daemon-reload and enable --now contextd.socket, which enables the HTTP socket too.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if dir == "" {
				cfg := os.Getenv("XDG_CONFIG_HOME")
				if cfg == "" {
					h, err := homeDir()
					if err != nil {
						return err
					}
					cfg = filepath.Join(h, ".config")
				}
				dir = filepath.Join(cfg, "systemd", "user")
			}
			if binary == "" {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("find own binary: %v: %w", err, catalog.ErrInternal)
				}
				if binary, err = filepath.EvalSymlinks(exe); err != nil {
					return fmt.Errorf("resolve own binary: %v: %w", err, catalog.ErrInternal)
				}
			}
			if !filepath.IsAbs(binary) {
				return fmt.Errorf("--binary %q must be absolute: %w", binary, catalog.ErrUsage)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("create %s: %v: %w", dir, err, catalog.ErrIO)
			}
			for _, u := range systemd.Units(binary) {
				p := filepath.Join(dir, u.Name)
				old, err := os.ReadFile(p)
				switch {
				case errors.Is(err, fs.ErrNotExist):
				case err != nil:
					return fmt.Errorf("read %s: %v: %w", p, err, catalog.ErrIO)
				case bytes.Equal(old, []byte(u.Content)):
					fmt.Fprintf(c.OutOrStdout(), "unchanged  %s\n", p)
					continue
				case !bytes.Contains(old, []byte("contextd")):
					return fmt.Errorf("%s: %w", p, catalog.ErrConflict)
				}
				if err := os.WriteFile(p+".new", []byte(u.Content), 0o644); err != nil {
					return fmt.Errorf("write %s: %v: %w", p, err, catalog.ErrIO)
				}
				if err := os.Rename(p+".new", p); err != nil {
					return fmt.Errorf("rename %s: %v: %w", p, err, catalog.ErrIO)
				}
				fmt.Fprintf(c.OutOrStdout(), "installed  %s\n", p)
			}
			if !enable {
				fmt.Fprintln(c.OutOrStdout(), "next: systemctl --user daemon-reload && systemctl --user enable --now contextd.socket")
				return nil
			}
			for _, args := range [][]string{{"--user", "daemon-reload"}, {"--user", "enable", "--now", "contextd.socket"}} {
				cmd := exec.Command("systemctl", args...)
				cmd.Stdout, cmd.Stderr = c.OutOrStdout(), c.ErrOrStderr()
				if err := cmd.Run(); err != nil {
					return fmt.Errorf("systemctl %v: %v (is a user manager running? check `systemctl --user status`): %w", args, err, catalog.ErrDaemonUnavailable)
				}
			}
			fmt.Fprintln(c.OutOrStdout(), "enabled    contextd.socket")
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "unit directory (default $XDG_CONFIG_HOME/systemd/user)")
	c.Flags().StringVar(&binary, "binary", "", "contextd binary for ExecStart (default: this one)")
	c.Flags().BoolVar(&enable, "enable", false, "also daemon-reload and enable --now contextd.socket")
	return c
}

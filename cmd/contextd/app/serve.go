package app

import (
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon"
	"github.com/contextd/contextd/daemon/configcheck"
	"github.com/contextd/contextd/daemon/listen"
	"github.com/contextd/contextd/daemon/logging"
)

func serveCommand() *cobra.Command {
	var (
		socket, cfgPath string
		allowRoot       bool
	)
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon (normally started by contextd.socket)",
		Long: `Run the daemon. Under systemd it serves the sockets that contextd.socket and
contextd-http.socket pass in; run by hand it binds $XDG_RUNTIME_DIR/contextd/contextd.sock
(or --socket) and http.sock beside it itself. It exits
by itself after idle_timeout without calls, and on SIGTERM drains calls in flight.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if os.Geteuid() == 0 && !allowRoot {
				return fmt.Errorf("contextd serves one unprivileged user and never needs root: %w", catalog.ErrRoot)
			}
			cfg, err := configcheck.Load(cfgPath)
			if err != nil {
				return err
			}
			level, _ := cfg.SlogLevel()
			log := logging.New(c.ErrOrStderr(), level)
			if socket == "" {
				socket = cfg.Socket
			}
			// An empty [http] socket is http.sock beside the main socket.
			lns, err := listen.OpenAll(socket, cfg.HTTP.Socket, log)
			if err != nil {
				return err
			}
			defer lns.Close()
			ctx, stop := signal.NotifyContext(c.Context(), unix.SIGTERM, unix.SIGINT)
			defer stop()
			return daemon.Run(ctx, lns.Main, &daemon.Options{
				Config:    cfg,
				Logger:    log,
				Activated: lns.Main.Activated,
				HTTP:      lns.HTTP,
				Version:   Version,
			})
		},
	}
	c.Flags().StringVar(&socket, "socket", "", "socket path when not socket-activated (default $XDG_RUNTIME_DIR/contextd/contextd.sock)")
	c.Flags().StringVar(&cfgPath, "config", "", "configuration file (default: first of $XDG_CONFIG_HOME/contextd/config.toml, /etc/contextd/config.toml)")
	c.Flags().BoolVar(&allowRoot, "allow-root", false, "run even as root (not recommended: contextd is per-user)")
	return c
}

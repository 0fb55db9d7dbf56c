package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/contextd/contextd/proxy/client"
)

func statusCommand() *cobra.Command {
	var socket string
	c := &cobra.Command{
		Use:   "status",
		Short: "Ask the running daemon how it is (starts it through socket activation)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if socket == "" {
				socket = client.SocketPath()
			}
			conn, err := client.Dial(socket)
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(c.Context(), 30*time.Second)
			defer cancel()
			st, err := conn.Status(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "socket:           %s\nversion:          %s\npid:              %d\nuptime:           %s\ncalls in flight:  %d\nsocket-activated: %t\ntools:            %s\n",
				socket, st.Version, st.PID, time.Duration(st.UptimeMS)*time.Millisecond, st.CallsInFlight, st.SocketActivated, strings.Join(st.Tools, " "))
			return nil
		},
	}
	c.Flags().StringVar(&socket, "socket", "", "socket path (default $CONTEXTD_SOCKET or $XDG_RUNTIME_DIR/contextd/contextd.sock)")
	return c
}

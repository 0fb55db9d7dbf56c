package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/mcpwrap"
	"github.com/contextd/contextd/mcp/intercept"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/record"
	"github.com/contextd/contextd/mcp/transport"
	"github.com/contextd/contextd/proxy/client"
	"github.com/contextd/contextd/wire/lite"
)

func mcpCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "mcp",
		Short: "MCP firewall: recorded sessions, replay, tool pins and approvals",
		Long: `contextd-proxy mcp wrap puts contextd between an agent and an MCP server; these commands
look at what it recorded and decide on tools whose descriptions changed. They ask the running
daemon (socket activation starts it).`,
	}
	c.AddCommand(mcpSessionsCommand(), mcpReplayCommand(), mcpApproveCommand(), mcpPinsCommand())
	return c
}

// admin sends one admin request to the daemon.
func admin(ctx context.Context, op string, args, out any) error {
	conn, err := client.Dial(client.SocketPath())
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return conn.Admin(ctx, op, args, out)
}

func loadSession(ctx context.Context, id string) (*record.Record, error) {
	var raw json.RawMessage
	if err := admin(ctx, mcpwrap.OpSession, mcpwrap.SessionArgs{ID: id}, &raw); err != nil {
		return nil, err
	}
	r, err := record.ReadJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("session %s: %v: %w", id, err, catalog.ErrInternal)
	}
	return r, nil
}

func mcpSessionsCommand() *cobra.Command {
	c := &cobra.Command{Use: "sessions", Short: "List, show and export recorded wrap sessions"}
	var limit int
	list := &cobra.Command{
		Use:   "list",
		Short: "List the latest sessions, newest first",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var ss []mcpwrap.SessionInfo
			if err := admin(c.Context(), mcpwrap.OpSessions, mcpwrap.SessionsArgs{Limit: limit}, &ss); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTARTED\tMESSAGES\tSTATE\tSERVER")
			for _, s := range ss {
				state := "ended"
				switch {
				case s.Live:
					state = "live"
				case s.Ended.IsZero():
					state = "unfinished"
				case s.Failure != "":
					state = "failed"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.ID, s.Started.Local().Format("2006-01-02 15:04:05"), s.Messages, state, s.Server)
				if s.Failure != "" {
					// Why it ended early, under its server: the last cell
					// of a line of empty ones (it widens no column, and
					// the rows below stay aligned with those above).
					fmt.Fprintf(tw, "\t\t\t\t%s\n", s.Failure)
				}
			}
			return tw.Flush()
		},
	}
	list.Flags().IntVar(&limit, "limit", 20, "how many sessions")
	show := &cobra.Command{
		Use:   "show SESSION",
		Short: "Show a session as a readable transcript (requests and responses paired)",
		Args:  oneArg("SESSION"),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := loadSession(c.Context(), args[0])
			if err != nil {
				return err
			}
			return record.WriteMarkdown(c.OutOrStdout(), r)
		},
	}
	var format, output string
	export := &cobra.Command{
		Use:   "export SESSION",
		Short: "Export a session as json, jsonl, har (HAR 1.2, for browser and HTTP tools) or md",
		Args:  oneArg("SESSION"),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := loadSession(c.Context(), args[0])
			if err != nil {
				return err
			}
			w := c.OutOrStdout()
			if output != "" && output != "-" {
				f, err := os.OpenFile(output, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
				if err != nil {
					return fmt.Errorf("export: %v: %w", err, catalog.ErrIO)
				}
				defer f.Close()
				w = f
			}
			switch format {
			case "json":
				err = record.WriteJSON(w, r)
			case "jsonl":
				err = record.WriteJSONL(w, r)
			case "har":
				err = record.WriteHAR(w, r, nil)
			case "md", "markdown":
				err = record.WriteMarkdown(w, r)
			default:
				return fmt.Errorf("export: --format %q: one of json, jsonl, har, md: %w", format, catalog.ErrUsage)
			}
			if err != nil {
				return fmt.Errorf("export: %v: %w", err, catalog.ErrIO)
			}
			return nil
		},
	}
	export.Flags().StringVar(&format, "format", "json", "json, jsonl, har or md")
	export.Flags().StringVarP(&output, "output", "o", "", "write to this file (0600) instead of standard output")
	c.AddCommand(list, show, export)
	return c
}

func mcpApproveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "approve SERVER TOOL",
		Short: "Accept a tool's changed description and schema, so that calls to it pass again",
		Long: `When a wrapped server changes a tool's description or schema after it was pinned (a "rug
pull"), calls to that tool are refused. Read the new description first (contextd mcp pins
SERVER shows what changed when; the session record holds the tools/list answer), then approve.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 2 {
				return fmt.Errorf("usage: contextd mcp approve SERVER TOOL: %w", catalog.ErrUsage)
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			var p intercept.Pin
			if err := admin(c.Context(), mcpwrap.OpApprove, mcpwrap.ApproveArgs{Server: args[0], Tool: args[1]}, &p); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "approved %s/%s: %s\n", args[0], args[1], p.Hash)
			return nil
		},
	}
}

func mcpPinsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "pins [SERVER]",
		Short: "List pinned tools, and the ones whose description changed (pending approval)",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return fmt.Errorf("usage: contextd mcp pins [SERVER]: %w", catalog.ErrUsage)
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			server := ""
			if len(args) == 1 {
				server = args[0]
			}
			var ps []intercept.Pin
			if err := admin(c.Context(), mcpwrap.OpPins, mcpwrap.PinsArgs{Server: server}, &ps); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tTOOL\tPINNED\tSTATE")
			for _, p := range ps {
				state := "ok"
				if p.Pending != "" {
					state = "CHANGED " + p.Changed.Local().Format("2006-01-02 15:04") + ": contextd mcp approve " + p.Server + " " + p.Tool
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Server, p.Tool, p.Pinned.Local().Format("2006-01-02 15:04"), state)
			}
			return tw.Flush()
		},
	}
}

func mcpReplayCommand() *cobra.Command {
	var name string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "replay SESSION [--name NAME] -- COMMAND [ARGS...]",
		Short: "Send a recorded session's client messages to a server again and show where its answers differ",
		Long: `Replay launches COMMAND as a wrapped server (sandboxed, through the daemon, recorded as a
session of its own), sends it the client messages of SESSION in their order, waiting for each
request's answer, and compares the answers with the recorded ones (ids aside). It exits 0 when
they agree and 1 when they differ.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 2 || c.ArgsLenAtDash() != 1 {
				return fmt.Errorf("usage: contextd mcp replay SESSION -- COMMAND [ARGS...]: %w", catalog.ErrUsage)
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			old, err := loadSession(c.Context(), args[0])
			if err != nil {
				return err
			}
			if name == "" {
				name = "replay"
			}
			fresh, err := replay(c.Context(), old, name, args[1:], timeout)
			if err != nil {
				return err
			}
			diffs := record.Diff(old, fresh)
			out := c.OutOrStdout()
			fmt.Fprintf(out, "replayed %d client message(s) of %s against %s: new session %s\n",
				len(record.ClientMessages(old)), old.Session.ID, strings.Join(args[1:], " "), fresh.Session.ID)
			if len(diffs) == 0 {
				fmt.Fprintln(out, "no differences")
				return nil
			}
			for _, d := range diffs {
				fmt.Fprintln(out, d.String())
			}
			return &exitError{code: 1, msg: fmt.Sprintf("%d difference(s)", len(diffs))}
		},
	}
	c.Flags().StringVar(&name, "name", "", "server name for pins and config (default \"replay\")")
	c.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for each answer")
	return c
}

// replay drives a wrap session with old's client messages and returns the new
// session's record.
func replay(ctx context.Context, old *record.Record, name string, command []string, timeout time.Duration) (*record.Record, error) {
	cwd, _ := os.Getwd()
	env := map[string]string{"PATH": os.Getenv("PATH")}
	conn, ready, err := client.OpenWrap(client.SocketPath(), &lite.Wrap{Name: name, Command: command, Cwd: cwd, Env: env, Replay: old.Session.ID})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	st := transport.NewStdio(conn, conn, nil)
	// Answers are read as they come; a request waits for its own.
	answers := make(chan []byte, 64)
	go func() {
		defer close(answers)
		for {
			msg, err := st.Read(ctx)
			if err != nil {
				return
			}
			answers <- msg
		}
	}()
	for _, msg := range record.ClientMessages(old) {
		info, err := jsonrpc.Classify(msg)
		if err != nil {
			continue
		}
		if err := st.Write(ctx, msg); err != nil {
			return nil, fmt.Errorf("replay: send: %v: %w", err, catalog.ErrConnectionLost)
		}
		if info.Kind != jsonrpc.KindRequest {
			continue
		}
		want := jsonrpc.Key(jsonrpc.ClientToServer, info.ID)
		deadline := time.After(timeout)
	wait:
		for {
			select {
			case a, ok := <-answers:
				if !ok {
					break wait
				}
				ai, err := jsonrpc.Classify(a)
				if err == nil && (ai.Kind == jsonrpc.KindResponse || ai.Kind == jsonrpc.KindError) &&
					jsonrpc.Key(jsonrpc.ClientToServer, ai.ID) == want {
					break wait
				}
			case <-deadline:
				break wait
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	// End the session: the server sees its stdin close, the record is closed.
	if uc, ok := conn.(interface{ CloseWrite() error }); ok {
		uc.CloseWrite()
	}
	for range answers {
	}
	return loadSession(ctx, ready.Record)
}

// exitError ends a command with a given status without being a catalog error.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

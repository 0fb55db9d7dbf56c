package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
)

// errAuditDamaged is the class of a log that fails verification.
var errAuditDamaged = catalog.ErrAuditDamaged

func auditCommand() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "audit",
		Short: "Read and verify the audit log of tool calls",
		Long: `contextd writes one record per tool call to an append-only, hash-chained log in
$XDG_STATE_HOME/contextd/audit (by default ~/.local/state/contextd/audit): who called,
what ran, under which sandbox layers, what came back, which secrets were scrubbed (by
rule, never the secret). ` + "`verify`" + ` checks that no record was edited, deleted or
reordered since it was written.`,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown audit subcommand %q (tail, show, verify): %w", args[0], catalog.ErrUsage)
			}
			return c.Help()
		},
	}
	c.PersistentFlags().StringVar(&dir, "dir", "", "audit log directory (default $XDG_STATE_HOME/contextd/audit)")
	c.AddCommand(auditTailCommand(&dir), auditShowCommand(&dir), auditVerifyCommand(&dir))
	return c
}

func auditTailCommand(dir *string) *cobra.Command {
	var (
		n      int
		follow bool
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "tail",
		Short: "Print the last records, one line each (-f: and then new ones as they come)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			d, err := auditDir(*dir)
			if err != nil {
				return err
			}
			if n < 0 {
				return fmt.Errorf("-n must not be negative: %w", catalog.ErrUsage)
			}
			out, errOut := c.OutOrStdout(), c.ErrOrStderr()
			es, err := audit.Tail(d, n)
			if err != nil && !errors.Is(err, audit.ErrTampered) {
				return auditError(d, err)
			}
			if err != nil {
				fmt.Fprintf(errOut, "warning: damaged lines skipped (run `contextd audit verify`):\n%v\n", err)
			}
			var last uint64
			for _, e := range es {
				printLine(out, e, asJSON)
				last = e.Seq
			}
			if !follow {
				return nil
			}
			if len(es) == 0 {
				// Start after the newest record even when none was printed.
				if tail, _ := audit.Tail(d, 1); len(tail) == 1 {
					last = tail[0].Seq
				}
			}
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err = audit.Follow(ctx, d, last, func(e audit.Entry, err error) error {
				if err != nil {
					fmt.Fprintf(errOut, "warning: %v (run `contextd audit verify`)\n", err)
					return nil
				}
				printLine(out, e, asJSON)
				return nil
			})
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return auditError(d, err)
		},
	}
	c.Flags().IntVarP(&n, "lines", "n", 10, "how many records")
	c.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing records as they are written")
	c.Flags().BoolVar(&asJSON, "json", false, "print the stored JSON lines")
	return c
}

func auditShowCommand(dir *string) *cobra.Command {
	var (
		session, tool, since, until string
		asJSON                      bool
	)
	c := &cobra.Command{
		Use:   "show [SEQ...]",
		Short: "Print records in full, selected by seq, session, tool or time",
		Long: `Print the records that match every selector given, oldest first, one block each (--json:
the stored lines). --since and --until take a duration back from now (90m, 2h, 48h) or a
time (2026-03-01, "2026-03-01 14:00", RFC 3339).`,
		RunE: func(c *cobra.Command, args []string) error {
			d, err := auditDir(*dir)
			if err != nil {
				return err
			}
			seqs := map[uint64]bool{}
			for _, a := range args {
				s, err := strconv.ParseUint(strings.TrimPrefix(a, "#"), 10, 64)
				if err != nil {
					return fmt.Errorf("%q is not a record number: %w", a, catalog.ErrUsage)
				}
				seqs[s] = true
			}
			f := audit.Filter{Session: session, Tool: tool}
			now := time.Now()
			if f.Since, err = parseWhen(since, now); err != nil {
				return fmt.Errorf("--since: %v: %w", err, catalog.ErrUsage)
			}
			if f.Until, err = parseWhen(until, now); err != nil {
				return fmt.Errorf("--until: %v: %w", err, catalog.ErrUsage)
			}
			out, errOut := c.OutOrStdout(), c.ErrOrStderr()
			shown, damaged := 0, 0
			for e, err := range audit.Read(d, f) {
				if errors.Is(err, audit.ErrTampered) {
					damaged++
					fmt.Fprintf(errOut, "warning: %v\n", err)
					continue
				}
				if err != nil {
					return auditError(d, err)
				}
				if len(seqs) > 0 && !seqs[e.Seq] {
					continue
				}
				if asJSON {
					printLine(out, e, true)
				} else {
					if shown > 0 {
						fmt.Fprintln(out)
					}
					printBlock(out, e)
				}
				shown++
			}
			if damaged > 0 {
				fmt.Fprintf(errOut, "warning: %d damaged line(s) skipped; run `contextd audit verify`\n", damaged)
			}
			if shown == 0 {
				fmt.Fprintln(errOut, "no matching record")
			}
			return nil
		},
	}
	c.Flags().StringVar(&session, "session", "", "only this session")
	c.Flags().StringVar(&tool, "tool", "", "only this tool (safe_bash, safe_read, …)")
	c.Flags().StringVar(&since, "since", "", "only records from then on (duration back from now, or a time)")
	c.Flags().StringVar(&until, "until", "", "only records before then (duration back from now, or a time)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the stored JSON lines")
	return c
}

func auditVerifyCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Check every record's hash, the chain, and that nothing was deleted",
		Long: `Check that every record's hash matches its content, that each record names the hash of
the one before, that seqs run on without gaps across files, and that the log starts and
ends where head.json says. Each problem is printed with file:line; the exit status is
non-zero if there is any. The chain catches accidental loss and edits by hand, not a
same-user attacker who recomputes every hash (compare with the journal for that).`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			d, err := auditDir(*dir)
			if err != nil {
				return err
			}
			out := c.OutOrStdout()
			rep, err := audit.Verify(d)
			if err != nil && !errors.Is(err, audit.ErrTampered) {
				return auditError(d, err)
			}
			for _, w := range rep.Warnings {
				fmt.Fprintf(out, "warning  %s\n", w)
			}
			for _, p := range rep.Problems {
				fmt.Fprintf(out, "FAIL     %s\n", p)
			}
			span := "no records"
			if rep.Records > 0 {
				span = fmt.Sprintf("%d records, seq %d-%d", rep.Records, rep.FirstSeq, rep.LastSeq)
			}
			if err != nil {
				return fmt.Errorf("audit log %s failed verification (%s in %d files): %d problem(s), the first: %s: %w",
					d, span, rep.Files, len(rep.Problems), rep.Problems[0], errAuditDamaged)
			}
			fmt.Fprintf(out, "ok  %s: %s in %d file(s); hashes, chain and head.json agree\n", d, span, rep.Files)
			return nil
		},
	}
}

// auditDir is --dir, or the default directory.
func auditDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	d, err := audit.DefaultDir()
	if err != nil {
		return "", fmt.Errorf("%v: %w", err, catalog.ErrConfig)
	}
	return d, nil
}

// auditError classifies an error reading the log.
func auditError(dir string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, audit.ErrNoLog), errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no audit log in %s (contextd creates it at its first call; see --dir): %w", dir, catalog.ErrNotFound)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%v: %w", err, catalog.ErrFilePermission)
	}
	return fmt.Errorf("%v: %w", err, catalog.ErrIO)
}

// parseWhen reads --since/--until: "" (no bound), a duration back from now,
// or a date or time (local unless it says otherwise).
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a duration back from now must be positive", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (2h) nor a time (2026-03-01 14:00)", s)
}

const localTime = "2006-01-02 15:04:05"

// printLine prints a record on one line, or its stored JSON.
func printLine(w io.Writer, e audit.Entry, asJSON bool) {
	if asJSON {
		fmt.Fprintf(w, "%s\n", e.Raw)
		return
	}
	fmt.Fprintf(w, "%s  %s\n", e.Time.Local().Format(localTime), e.Summary())
}

// printBlock prints a record in full, one field a line.
func printBlock(w io.Writer, e audit.Entry) {
	field := func(name, format string, a ...any) {
		fmt.Fprintf(w, "  %-11s %s\n", name, fmt.Sprintf(format, a...))
	}
	what := e.Tool
	if e.Kind != audit.KindCall {
		what = e.Kind
	}
	fmt.Fprintf(w, "#%d  %s  %s\n", e.Seq, e.Time.Local().Format(localTime+" -0700"), what)
	connections := func() {
		for _, c := range e.Egress {
			field("connection", "%s", audit.ConnectionText(c))
		}
	}
	switch e.Kind {
	case audit.KindEgress:
		// A wrapped server's connections, written when it ended.
		field("tool", "%s", orDash(e.Tool))
		if e.Session != "" {
			field("session", "%s", e.Session)
		}
		if n := e.NetworkText(); n != "" {
			field("network", "%s", n)
		}
		field("duration", "%s", time.Duration(e.DurationMS)*time.Millisecond)
		connections()
	case audit.KindCall:
		if e.Session != "" {
			field("session", "%s", e.Session)
		}
		field("caller", "pid %d, uid %d, %s", e.PeerPID, e.PeerUID, orDash(e.PeerExe))
		field("cwd", "%s", orDash(e.Cwd))
		if e.Workspace != "" && e.Workspace != e.Cwd {
			field("workspace", "%s", e.Workspace)
		}
		if len(e.Args) > 0 {
			field("args", "%s", e.Args)
		}
		field("sandbox", "%s", sandboxText(e.Sandbox, e.NetworkText()))
		connections()
		result := fmt.Sprintf("exit %d", e.ExitCode)
		if e.Error != "" {
			result += ", " + e.Error
		}
		result += fmt.Sprintf(", %s, %d bytes produced, %d tokens returned", time.Duration(e.DurationMS)*time.Millisecond, e.BytesProduced, e.TokensReturned)
		if e.Truncated {
			result += ", truncated"
		}
		field("result", "%s", result)
		if e.ContinueOf != "" {
			field("continues", "%s", e.ContinueOf)
		}
		if len(e.Findings) > 0 {
			field("scrubbed", "%s", ruleCounts(e.Findings))
		}
		if e.SecondLayer > 0 || len(e.SecondLayerRules) > 0 {
			field("2nd layer", "%d caught after the sandbox's scrub: %s", e.SecondLayer, ruleCounts(e.SecondLayerRules))
		}
	default:
		field("reason", "%s", e.Reason)
	}
	for _, warn := range e.Warnings {
		field("warning", "%s", warn)
	}
	field("hash", "%s (prev %s)", e.Hash, orDash(e.Prev))
	field("at", "%s:%d", e.File, e.Line)
}

// sandboxText is a call's layers on one line; network is the record's
// (audit.Record.NetworkText).
func sandboxText(s audit.Sandbox, network string) string {
	var parts []string
	if s.Namespaces {
		parts = append(parts, "namespaces")
	} else {
		parts = append(parts, "no namespaces")
	}
	if s.Seccomp != "" {
		parts = append(parts, "seccomp "+s.Seccomp)
	} else {
		parts = append(parts, "no seccomp")
	}
	switch {
	case s.Scope != "":
		parts = append(parts, "scope "+s.Scope)
	case s.ScopeNote != "":
		parts = append(parts, "no scope ("+s.ScopeNote+")")
	default:
		parts = append(parts, "no scope")
	}
	if network != "" {
		parts = append(parts, "network "+network)
	}
	return strings.Join(parts, ", ")
}

func ruleCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

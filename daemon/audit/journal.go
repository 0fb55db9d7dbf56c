package audit

import (
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coreos/go-systemd/v22/journal"
)

// MessageID is the journal MESSAGE_ID of audit records:
// `journalctl --user MESSAGE_ID=d015a2616b45461bb82baddb082d5a5e`.
const MessageID = "d015a2616b45461bb82baddb082d5a5e"

// maxJournalArgs bounds CONTEXTD_ARGS; the file has the whole arguments.
const maxJournalArgs = 1024

type sendFunc func(message string, pri journal.Priority, vars map[string]string) error

func journalSender(m JournalMode) sendFunc {
	switch {
	case m == JournalOff:
		return nil
	case m == JournalAuto && !underSystemd():
		return nil
	case !journal.Enabled():
		return nil
	}
	return journal.Send
}

// underSystemd: stderr is the journal, or systemd started us as a unit.
func underSystemd() bool {
	if ok, _ := journal.StderrIsJournalStream(); ok {
		return true
	}
	return os.Getenv("INVOCATION_ID") != ""
}

// journal sends records to the journal. It never fails: the file is the
// record, the journal a copy, and a call must not fail because journald is
// away. The first failure is logged.
func (l *Log) journal(rs ...*Record) {
	if l.send == nil {
		return
	}
	for _, r := range rs {
		if err := l.send(r.Summary(), priority(r), journalFields(r)); err != nil && !l.journalWarnd.Swap(true) {
			l.opt.Logger.Warn("audit: cannot send records to the journal; the log files still have them", "err", err)
		}
	}
}

func priority(r *Record) journal.Priority {
	switch {
	case r.Kind == KindReset:
		return journal.PriWarning
	case r.Kind != KindCall, r.SecondLayer > 0, len(r.Findings) > 0:
		return journal.PriNotice
	}
	return journal.PriInfo
}

// journalFields are the structured fields of a record: `journalctl --user
// CONTEXTD_TOOL=safe_bash CONTEXTD_EXIT=2`.
func journalFields(r *Record) map[string]string {
	v := map[string]string{
		"SYSLOG_IDENTIFIER": "contextd",
		"MESSAGE_ID":        MessageID,
		"CONTEXTD_SEQ":      strconv.FormatUint(r.Seq, 10),
		"CONTEXTD_HASH":     r.Hash,
		"CONTEXTD_PREV":     r.Prev,
	}
	set := func(k, s string) {
		if s != "" {
			v[k] = s
		}
	}
	set("CONTEXTD_KIND", r.Kind)
	set("CONTEXTD_REASON", r.Reason)
	switch r.Kind {
	case KindCall:
	case KindEgress:
		set("CONTEXTD_TOOL", r.Tool)
		set("CONTEXTD_SESSION", r.Session)
		v["CONTEXTD_DURATION_MS"] = strconv.FormatInt(r.DurationMS, 10)
		egressFields(r, set)
		return v
	default:
		return v
	}
	v["CONTEXTD_EXIT"] = strconv.Itoa(r.ExitCode)
	v["CONTEXTD_DURATION_MS"] = strconv.FormatInt(r.DurationMS, 10)
	v["CONTEXTD_BYTES"] = strconv.FormatInt(r.BytesProduced, 10)
	v["CONTEXTD_TOKENS"] = strconv.Itoa(r.TokensReturned)
	v["CONTEXTD_TRUNCATED"] = strconv.FormatBool(r.Truncated)
	v["CONTEXTD_PEER_PID"] = strconv.FormatInt(int64(r.PeerPID), 10)
	v["CONTEXTD_PEER_UID"] = strconv.FormatUint(uint64(r.PeerUID), 10)
	set("CONTEXTD_PEER_EXE", r.PeerExe)
	set("CONTEXTD_SESSION", r.Session)
	set("CONTEXTD_TOOL", r.Tool)
	set("CONTEXTD_ARGS", clip(string(r.Args), maxJournalArgs))
	set("CONTEXTD_CWD", r.Cwd)
	set("CONTEXTD_WORKSPACE", r.Workspace)
	set("CONTEXTD_ERROR", r.Error)
	set("CONTEXTD_CONTINUE_OF", r.ContinueOf)
	set("CONTEXTD_SCOPE", r.Sandbox.Scope)
	set("CONTEXTD_SCOPE_NOTE", r.Sandbox.ScopeNote)
	set("CONTEXTD_SECCOMP", r.Sandbox.Seccomp)
	v["CONTEXTD_NAMESPACES"] = strconv.FormatBool(r.Sandbox.Namespaces)
	egressFields(r, set)
	set("CONTEXTD_FINDINGS", counts(r.Findings))
	if r.SecondLayer > 0 {
		v["CONTEXTD_SECOND_LAYER"] = strconv.Itoa(r.SecondLayer)
	}
	set("CONTEXTD_SECOND_LAYER_RULES", counts(r.SecondLayerRules))
	set("CONTEXTD_WARNINGS", strings.Join(r.Warnings, "; "))
	return v
}

// egressFields are the record's network and its connections through the
// egress proxy: `journalctl --user CONTEXTD_NETWORK="egress proxy"
// CONTEXTD_EGRESS_REFUSED=1`. The connections are one field, "; " between
// them, cut at maxJournalEgress; the file has them all.
func egressFields(r *Record, set func(k, s string)) {
	set("CONTEXTD_NETWORK", r.Sandbox.NetworkMode())
	set("CONTEXTD_EGRESS_RULES", r.Sandbox.EgressRules)
	if len(r.Egress) == 0 {
		return
	}
	set("CONTEXTD_EGRESS_CONNECTIONS", strconv.Itoa(len(r.Egress)))
	if n := refusedCount(r.Egress); n > 0 {
		set("CONTEXTD_EGRESS_REFUSED", strconv.Itoa(n))
	}
	var b strings.Builder
	for i, c := range r.Egress {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(ConnectionText(c))
		if b.Len() > maxJournalEgress {
			break
		}
	}
	set("CONTEXTD_EGRESS", clip(b.String(), maxJournalEgress))
}

// maxJournalEgress bounds CONTEXTD_EGRESS.
const maxJournalEgress = 4096

// counts renders rule counts as "rule:n rule:n", sorted.
func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(m[k]))
	}
	return b.String()
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

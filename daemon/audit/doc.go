// Package audit is contextd's audit log: one hash-chained JSON line per tool call.
//
// # Files
//
// The log lives in one directory (Options.Dir, by default
// $XDG_STATE_HOME/contextd/audit), mode 0700, owned by the daemon's user:
//
//	audit-<first seq, 12 digits>-<UTC creation time, 20060102T150405Z>.jsonl
//	head.json    the seq and hash of the last record, and where the log starts
//	lock         flock(2)ed by the one Log writing the directory
//
// Log files are 0600 and only ever appended to (O_APPEND). A file is named after
// the seq of its first record when it is created and never renamed; rotation
// starts a new file once the current one would grow past Options.MaxFileSize.
// The current file is the one with the highest seq. Sorting the names by their
// seq gives the order of the chain.
//
// # Records and the chain
//
// Every line is one JSON object, a [Record], written with a single write(2) and
// ended by '\n'. Its members appear in the order of the Record fields, "hash"
// is always last, and the line holds no other newline (encoding/json escapes
// them). A record is hashed over its own bytes:
//
//	line = body[:len(body)-1] + `,"hash":"` + hex(sha256(body)) + `"}`
//
// where body is the record as encoding/json writes it with Hash empty (the
// member is omitted, so body ends with '}'), without HTML escaping. Verifying a
// line therefore needs no JSON canonicalisation: cut the final
// `,"hash":"<64 hex digits>"}`, put the '}' back, and hash the bytes as they
// are. In a shell:
//
//	line=$(sed -n 5p audit-….jsonl); printf '%s}' "${line%,\"hash\":*}" | sha256sum
//
// Every record carries "seq", counting from 1 without gaps across all files, and
// "prev", the "hash" of the record with the previous seq ("" for seq 1). As prev
// is inside the hashed body, each hash covers the whole history before it:
// changing any byte of any record breaks either that record's own hash or, if
// the hash was recomputed, the prev link of the next record.
//
// head.json is updated after every append: two slots of 512 bytes written in
// turn with pwrite(2), each a JSON object padded with spaces and carrying its
// own check sum, so that a write torn by a crash costs only that update. It
// holds the last seq and hash, so deleting records at the end of the log, which
// leaves a chain that is intact as far as it goes, is detected too. It also
// holds the base: the seq and prev of the first record the log should still
// have. Retention (Options.MaxFiles) moves the base forward before it deletes
// the oldest files and then appends a "retention" record naming what it
// deleted, so an old file removed by retention is told apart from one removed
// by hand.
//
// When Open finds the log damaged (a partial last line after a crash or a full
// disk, a last record that does not verify, head.json missing or disagreeing
// with the log) it does not refuse to start: it logs a warning and starts a new
// file whose first record is of kind "chain-reset", with the reason, the next
// unused seq and, as prev, the last hash it could trust. New records chain to
// it. Verify reports every reset as a problem, so a break stays visible, and
// does not check the reset record's own link: the damage before it is
// reported where it is.
//
// # What the chain protects against
//
// The chain detects accidental loss (a crash, a full disk, a restored backup, a
// file deleted by mistake) and naive edits: a changed, deleted, inserted or
// reordered line, a deleted file, a truncated end. It does not stop a
// determined attacker running as the same user: without a secret key they can
// rewrite every record, hash and head.json consistently. Records also go to the
// journal when contextd runs under systemd (CONTEXTD_SEQ and CONTEXTD_HASH
// among the fields); the journal is written by journald, not by the user, so
// comparing the two finds such a rewrite (by hand for now:
// journalctl --user MESSAGE_ID=d015a2616b45461bb82baddb082d5a5e CONTEXTD_SEQ=N).
//
// # Durability
//
// By default a record is in the page cache when Append returns: a crash of
// contextd loses nothing, a crash of the kernel or a power cut may lose the
// last records (Verify then reports them missing against head.json, or a
// partial line). Files are fsync'ed when they are rotated away and on Close.
// Options.SyncEveryRecord makes Append fdatasync(2) the log file and head.json
// before it returns; see BenchmarkAppend for what that costs.
package audit

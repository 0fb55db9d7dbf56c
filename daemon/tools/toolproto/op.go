// Package toolproto is what a tool's two halves say across the sandbox: the operation in, the output frames out.
package toolproto

// Op is a tool's operation as the daemon hands it to the sandbox, on the
// tool process's stdin: the input is decoded and paths resolved against the
// workspace in the daemon; the work itself (the shell command, the file I/O)
// happens in the sandbox, where the workspace is the only writable place,
// the seccomp profile admits only what that code needs, and file I/O is
// confined by openat2 too.
type Op struct {
	Tool    string  `json:"tool"`
	Root    string  `json:"root"`
	Rel     string  `json:"rel"`
	Display string  `json:"display"` // the path as the caller wrote it, for messages
	Offset  int     `json:"offset,omitempty"`
	Limit   int     `json:"limit,omitempty"`
	Content *string `json:"content,omitempty"`
	// Over (safe_write): the workspace.FileID.Key of the file the secrets
	// put back in Content were read from; the write replaces that file or
	// nothing. "": Content holds no secret of a file.
	Over string `json:"over,omitempty"`

	// safe_bash: the shell command, run in Dir with Env.
	Shell   string   `json:"shell,omitempty"`
	Command string   `json:"command,omitempty"`
	Dir     string   `json:"dir,omitempty"`
	Env     []string `json:"env,omitempty"`

	// Rules is the user's extra gitleaks configuration (TOML), for the
	// tool's own scrub.
	Rules string `json:"rules,omitempty"`
	// Window: the tool scrubs the first and last Window bytes of a long
	// output, the part a first response can show, and sends a gap frame
	// for the middle instead of its bytes. 0: scrub and send everything.
	Window int `json:"window,omitempty"`
	// Salience, when set, has the tool run the salience pass over the
	// middle it does not send (safe_read), with the user's rules after the
	// built-in table; nil: the pass is off ([salience] enabled = false).
	Salience *Salience `json:"salience,omitempty"`

	// safe_read's page mode: render bytes [Skip, Skip+N) of Gap, a gap of
	// an earlier read of this file, again.
	Gap  *Gap  `json:"gap,omitempty"`
	Skip int64 `json:"skip,omitempty"`
	N    int64 `json:"n,omitempty"`
}

// Salience is the salience pass's configuration as a tool gets it: the
// user's rules ([[salience.rules]]), after the built-in table.
type Salience struct {
	Rules []SalienceRule `json:"rules,omitempty"`
}

// SalienceRule is one rule of the user's, in the protocol's own type (each
// side converts it to and from package salience's): the protocol between
// a tool's two halves depends on neither side's packages.
type SalienceRule struct {
	Name    string `json:"name"`
	Pattern string `json:"pattern"`          // RE2, matched against each line
	Kind    string `json:"kind,omitempty"`   // "failure" (default) or "summary"
	Before  int    `json:"before,omitempty"` // lines of context kept before a match
	After   int    `json:"after,omitempty"`  // and after it
}

package proxy

// UsageText returns what `contextd-proxy help` prints. The packaging generator
// (packaging/gen) builds the contextd-proxy(1) man page and the shell completions
// from it, so that they follow the commands this file's dispatch knows.
func UsageText() string { return usage }

package tools

import (
	"fmt"

	"github.com/contextd/contextd/daemon/gitguard"
)

// guardGit runs a call that can write the workspace between a fingerprint
// of what the host's git runs on its own there and its check (gitguard):
// what the call changed of it is reverted and named in the result's
// warnings, which the audit record carries; a change that could not be
// reverted fails the call. A fingerprint that cannot be taken refuses the
// call before it runs.
//
// l is the Find of the workspace the call's mounts were worked out from,
// just before: the fingerprint covers the same entries.
func guardGit(tool string, env *Env, l gitguard.Layout, run func() Outcome) Outcome {
	snap, err := gitguard.TakeLayout(env.Place.Root, l)
	if err != nil {
		return Outcome{Err: fmt.Errorf("%s: %w", tool, err)}
	}
	o := run()
	rep := snap.Check(gitguard.DefaultDir())
	o.Warnings = append(o.Warnings, rep.Warnings()...)
	if err := rep.Err(); err != nil {
		if o.Err != nil {
			err = fmt.Errorf("%w (and the call itself failed: %v)", err, o.Err)
		}
		o.Err = fmt.Errorf("%s: %w", tool, err)
	}
	return o
}

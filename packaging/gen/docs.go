package main

import (
	"fmt"
	"strings"
	"time"
)

// License is the project's license. The repository has no LICENSE file yet;
// Apache-2.0 stands in until it has one (packaging/README.md says so too).
const License = "Apache-2.0"

// Copyright is /usr/share/doc/contextd/copyright in the machine-readable
// format (DEP-5). The Go modules linked into the binaries are listed, with
// their versions, so that a reader can find their own licenses.
func Copyright(year int, mods []Module) []byte {
	var b strings.Builder
	b.WriteString(`Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: contextd
Upstream-Contact: ` + Maintainer + `
Source: https://github.com/contextd/contextd
Comment: The repository does not hold a LICENSE file yet; until it does, contextd
 is distributed under the Apache License 2.0, as stated below.
 .
 contextd and contextd-proxy are statically linked Go programs. Besides the Go
 standard library (BSD-3-Clause, The Go Authors) they contain these Go modules,
 each under its own license, found at the root of the module's source:
`)
	if len(mods) == 0 {
		b.WriteString(" (none)\n")
	}
	for _, m := range mods {
		fmt.Fprintf(&b, "  %s %s\n", m.Path, m.Version)
	}
	fmt.Fprintf(&b, `
Files: *
Copyright: %d contextd developers
License: %s

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License");
 you may not use this file except in compliance with the License.
 You may obtain a copy of the License at
 .
 https://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software
 distributed under the License is distributed on an "AS IS" BASIS,
 WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 See the License for the specific language governing permissions and
 limitations under the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0
 can be found in "/usr/share/common-licenses/Apache-2.0".
`, year, License)
	return []byte(b.String())
}

// Changelog is the Debian changelog of this build: one entry for the version,
// dated at the build time.
func Changelog(version, describe string, when time.Time) []byte {
	what := "  * Built from the contextd repository"
	if describe != "" {
		what += " at " + describe + " (git describe)"
	}
	what += ".\n"
	return []byte(fmt.Sprintf("contextd (%s) unstable; urgency=medium\n\n%s\n -- %s  %s\n",
		version, what, Maintainer, when.UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700")))
}

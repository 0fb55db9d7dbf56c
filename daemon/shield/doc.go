// Package shield keeps what the host runs later, and the credential
// deny-list, out of a sandbox's reach: read-only binds, masks, pins and
// placeholders in the workspace, and nested agent configuration set aside.
package shield

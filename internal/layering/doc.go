// Package layering holds the import rules between contextd's layers, as data
// a test checks against the module's real import graph.
package layering

package catalog

//go:generate go run ./gendoc ../docs/errors.md

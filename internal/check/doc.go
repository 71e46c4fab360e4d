// Package check words the library's most common validation errors, those
// of a numeric setting whose zero value means its default: each returns nil
// for a valid value and otherwise an error naming the field and its value.
// It is internal: its names are not part of the module's API.
package check

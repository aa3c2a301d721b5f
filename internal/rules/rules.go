// Package rules is the one way a constructor refuses its Config: a table
// of rules, each a condition that can only be a mistake and the message
// that names the field, whose first broken rule is the error.
package rules

import "errors"

// Rule is one row of a Config's table of rules.
type Rule struct {
	broken bool
	msg    string
}

// If returns a rule, broken when broken is true, whose error says msg (a
// message starting with the package's name).
func If(broken bool, msg string) Rule { return Rule{broken, msg} }

// First returns the error of the first broken rule of rs, or nil.
func First(rs ...Rule) error {
	for _, r := range rs {
		if r.broken {
			return errors.New(r.msg)
		}
	}
	return nil
}
